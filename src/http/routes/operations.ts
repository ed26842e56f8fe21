import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import { ServiceError } from '../../errors.js';
import { isDatabaseUnavailable } from '../../store/database.js';
import type { App, RequestGuard } from '../app-types.js';
import { ErrorBody, HealthStatus } from '../schemas.js';

export interface OperationsRouteDeps {
  /** Throws when the database is unreachable or its schema is behind. */
  checkReadiness: () => Promise<void>;
  registry: Registry;
  requireMetricsToken: RequestGuard;
}

/** The exposition format's media type, as prom-client answers it: documented as what it is, not JSON. */
const PrometheusText = {
  description: 'Prometheus text format',
  content: { 'text/plain; version=0.0.4': { schema: Type.String() } },
};

/** Liveness, readiness and Prometheus metrics: what orchestrators and dashboards poll. */
export function operationsRoutes(app: App, { checkReadiness, registry, requireMetricsToken }: OperationsRouteDeps) {
  app.get('/healthz', { schema: { response: { 200: HealthStatus } } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { response: { 200: HealthStatus, 503: ErrorBody } } }, async (request) => {
    try {
      await checkReadiness();
    } catch (error) {
      // Anyone may call /readyz: the driver's message (host, port, user, schema) goes to the log only.
      request.log.warn({ err: error }, 'not ready');
      throw new ServiceError(
        'not_ready',
        isDatabaseUnavailable(error)
          ? 'the database cannot be reached'
          : 'the database is not migrated to the current schema, or cannot answer',
      );
    }
    return { status: 'ready' };
  });

  app.get(
    '/metrics',
    { schema: { response: { 200: PrometheusText, 401: ErrorBody } }, onRequest: requireMetricsToken },
    async (_request, reply) => reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
}
