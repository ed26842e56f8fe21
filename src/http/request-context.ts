import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { BaseLogger } from 'pino';
import type { RequestContext } from '../audit/audit-trail.js';

/** A caller's X-Request-Id is kept when it looks like an id; anything else gets a fresh UUID. */
export function requestIdFor(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(offered) ? offered : randomUUID();
}

/**
 * What the domains know of a request: its client address and its logger. The logger is passed,
 * not found through AsyncLocalStorage, whose promise hooks cost every request about a tenth of
 * its time on Node 20 (docs/PERFORMANCE.md).
 */
export function contextOf(request: FastifyRequest): RequestContext {
  // Fastify's request logger is a pino child of the service's logger, typed more narrowly.
  return { clientAddress: request.ip, log: request.log as unknown as BaseLogger };
}
