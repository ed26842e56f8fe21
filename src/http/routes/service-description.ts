import { Type } from '@sinclair/typebox';
import type { App } from '../app-types.js';

/** GET /mfa/service/: what any page may show before anyone signs in. */
const ServiceDescription = Type.Object({ service_name: Type.String() });

/**
 * Issue 31: the account page names the service in its header (SERVICE_NAME), as the hosted sign-in
 * does from its sign-in's description; the account page has no sign-in to describe, so it asks
 * here. Public: the name is in every SMS and mail the service sends anyway.
 */
export function serviceDescriptionRoutes(app: App, { serviceName }: { serviceName: string }) {
  app.get('/mfa/service/', { schema: { response: { 200: ServiceDescription } } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return { service_name: serviceName };
  });
}
