import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { BaseLogger } from 'pino';

const requestLogs = new AsyncLocalStorage<BaseLogger>();

/** A caller's X-Request-Id is kept when it looks like an id; anything else gets a fresh UUID. */
export function requestIdFor(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(offered) ? offered : randomUUID();
}

/** Runs the rest of a request's handling with its logger as the current one. */
export function runWithRequestLog(log: BaseLogger, next: () => void): void {
  requestLogs.run(log, next);
}

/**
 * A logger for the domains: inside a request it writes through that request's logger, so its
 * lines carry the request id; outside one (start-up), through `root`.
 */
export function requestScopedLogger(root: BaseLogger): BaseLogger {
  return new Proxy(root, {
    get(target, property, receiver) {
      const current = requestLogs.getStore() ?? target;
      const value = Reflect.get(current, property, receiver === target ? current : receiver);
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
}
