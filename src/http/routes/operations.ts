import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import { ServiceError } from '../../errors.js';
import type { App, RequestGuard } from '../app-types.js';
import { ErrorBody, HealthStatus } from '../schemas.js';

export interface OperationsRouteDeps {
  /** Throws when the database is unreachable or its schema is behind. */
  checkReadiness: () => Promise<void>;
  registry: Registry;
  requireMetricsToken: RequestGuard;
}

/** Liveness, readiness and Prometheus metrics: what orchestrators and dashboards poll. */
export function operationsRoutes(app: App, { checkReadiness, registry, requireMetricsToken }: OperationsRouteDeps) {
  app.get('/healthz', { schema: { response: { 200: HealthStatus } } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { response: { 200: HealthStatus, 503: ErrorBody } } }, async () => {
    try {
      await checkReadiness();
    } catch (error) {
      throw new ServiceError('not_ready', error instanceof Error ? error.message : 'the database is not ready');
    }
    return { status: 'ready' };
  });

  app.get(
    '/metrics',
    {
      schema: { response: { 200: Type.String({ description: 'Prometheus text format' }), 401: ErrorBody } },
      onRequest: requireMetricsToken,
    },
    async (_request, reply) => reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
}
