import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
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
  return { clientAddress: request.clientAddress, log: request.log as unknown as BaseLogger };
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
