import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { BaseLogger, Bindings, ChildLoggerOptions } from 'pino';
import type { RequestContext } from '../audit/audit-trail.js';

/** A caller's X-Request-Id is kept when it looks like an id; anything else gets a fresh UUID. */
export function requestIdFor(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(offered) ? offered : randomUUID();
}

/**
 * The logger Fastify gives each request (its `childLoggerFactory`), made on first use. A pino
 * child costs every request a few µs, its bindings going through the redaction, and most requests
 * never log through it: their one line is written by app.ts (docs/PERFORMANCE.md).
 */
export function lazyRequestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options);
}

class LazyChildLogger implements FastifyBaseLogger {
  #made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get made(): FastifyBaseLogger {
    this.#made ??= this.parent.child(this.bindings, this.options);
    return this.#made;
  }

  /** Logs through the child, made now if it was not yet; `this` stays the child. */
  private forward(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent', args: unknown[]) {
    (this.made[level] as (...args: unknown[]) => void)(...args);
  }

  get level() {
    return this.made.level;
  }
  set level(level) {
    this.made.level = level;
  }
  fatal(...args: unknown[]) {
    this.forward('fatal', args);
  }
  error(...args: unknown[]) {
    this.forward('error', args);
  }
  warn(...args: unknown[]) {
    this.forward('warn', args);
  }
  info(...args: unknown[]) {
    this.forward('info', args);
  }
  debug(...args: unknown[]) {
    this.forward('debug', args);
  }
  trace(...args: unknown[]) {
    this.forward('trace', args);
  }
  silent(...args: unknown[]) {
    this.forward('silent', args);
  }
  child(bindings: Bindings, options?: ChildLoggerOptions) {
    return this.made.child(bindings, options);
  }
}

/**
 * What the domains know of a request: its client address and its logger. The logger is passed,
 * not found through AsyncLocalStorage, whose promise hooks cost every request about a tenth of
 * its time on Node 20 (docs/PERFORMANCE.md).
 */
export function contextOf(request: FastifyRequest): RequestContext {
  // Fastify's request logger is a pino child of the service's logger, typed more narrowly.
  return {
    clientAddress: request.clientAddress,
    acceptLanguage: request.headers['accept-language'],
    userAgent: request.headers['user-agent'],
    log: request.log as unknown as BaseLogger,
  };
}

/**
 * The address of the client: the peer's, or, when the peer is one of the load balancers named in
 * TRUST_PROXY, the nearest address in X-Forwarded-For that is not another of them. Entries that
 * are not IP addresses (`unknown`, `1.2.3.4:5555`, `999.1.1.1`) are skipped: a client must not
 * choose its own throttle scope by sending garbage through the balancer.
 */
export function createClientAddressResolver(trustedProxies: readonly string[] | undefined) {
  const trusted = new BlockList();
  for (const entry of trustedProxies ?? []) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) trusted.addAddress(address, type);
    else trusted.addSubnet(address, Number(prefix), type);
  }
  const isTrusted = (address: string) => {
    const version = isIP(address);
    return version !== 0 && trusted.check(address, version === 6 ? 'ipv6' : 'ipv4');
  };

  return function clientAddressOf(request: IncomingMessage): string | undefined {
    let address = request.socket.remoteAddress;
    if (trustedProxies === undefined || address === undefined || !isTrusted(address)) return address;
    const header = request.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((hop) => hop.trim());
    for (const hop of hops.reverse()) {
      if (isIP(hop) === 0) continue;
      address = hop;
      if (!isTrusted(hop)) break;
    }
    return address;
  };
}
