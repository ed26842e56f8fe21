import { lookup } from 'node:dns';
import { lookup as lookupAsync } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ServiceError } from '../errors.js';

/**
 * Where a webhook may not go unless WEBHOOK_ALLOW_PRIVATE=true: our own host, the private network
 * behind us, and the cloud metadata service (link-local), which a URL chosen by whoever holds the
 * admin token could otherwise reach (SSRF). IPv6 addresses that carry an IPv4 address (mapped,
 * NAT64, translated, 6to4) meet the IPv4 rules; local-use NAT64 (RFC 8215) leads into a private network.
 */
const KINDS: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7', '64:ff9b:1::/48'],
  'link-local': ['169.254.0.0/16', 'fe80::/10'],
  reserved: ['0.0.0.0/8', '192.0.0.0/24', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4', '::/128', 'ff00::/8'],
};

const BLOCKS = Object.entries(KINDS).map(([kind, ranges]) => {
  const list = new BlockList();
  for (const range of ranges) {
    const [network = '', prefix] = range.split('/');
    list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  }
  return { kind, list };
});

/**
 * Why a webhook may not go to this IP address (`loopback`, `private`, …), or undefined for a public
 * one. An IPv6 address must be global unicast (ipaddr.js's `unicast`: 2000::/3 without its
 * documentation, Teredo, ORCHID, benchmarking and other special ranges), or carry an IPv4 address
 * that is public; anything else (site-local fec0::/10, discard 100::/64, IPv4-compatible ::a.b.c.d…)
 * is refused as reserved.
 */
export function addressRefusal(address: string): string | undefined {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  const kind = BLOCKS.find(({ list }) => list.check(address, family))?.kind;
  if (kind || family === 'ipv4') return kind;
  // Read as the WHATWG URL parser (and the kernel) reads it: ipaddr.js takes ::a.b.c.d for ::ffff:a.b.c.d.
  const ip = ipaddr.IPv6.parse(hostOf(new URL(`http://[${address}]/`)));
  const carried = embeddedIpv4(ip);
  if (carried) return addressRefusal(carried);
  return ip.match(GLOBAL_UNICAST) && ip.range() === 'unicast' ? undefined : 'reserved';
}

/** RFC 4291 §2.4: global unicast addresses are those of 2000::/3. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * The IPv4 address that an IPv6 address of these prefixes reaches: IPv4-mapped ::ffff:0:0/96,
 * NAT64's 64:ff9b::/96 (RFC 6052), IPv4-translated ::ffff:0:0:0/96 (RFC 6145) and 6to4's 2002::/16
 * (RFC 3056). Undefined otherwise.
 */
function embeddedIpv4(ip: ipaddr.IPv6): string | undefined {
  const ipv4 = (high = 0, low = 0) => [high >> 8, high & 255, low >> 8, low & 255].join('.');
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  switch (ip.range()) {
    case 'rfc6052':
    case 'rfc6145':
      return ipv4(ip.parts[6], ip.parts[7]);
    case '6to4':
      return ipv4(ip.parts[1], ip.parts[2]);
    default:
      return undefined;
  }
}

/** Thrown at send time when the destination resolves to an address a webhook may not go to. */
export class DestinationRefused extends Error {}

/**
 * Throws 400 `webhook_url_refused` unless `url` is one a webhook may go to: https, no credentials,
 * and (unless `allowPrivate`) a host whose every address is public.
 */
export async function checkDestination(url: string, allowPrivate: boolean): Promise<URL> {
  const refuse = (reason: string) => new ServiceError('webhook_url_refused', reason);
  if (!URL.canParse(url)) throw refuse('url: expected an absolute https URL, e.g. https://hooks.example.com/mfa');
  const parsed = new URL(url);
  if (parsed.protocol === 'http:' && !allowPrivate) {
    throw refuse(
      'url: expected an https URL, e.g. https://hooks.example.com/mfa (http is allowed only when the server runs with WEBHOOK_ALLOW_PRIVATE=true)',
    );
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw refuse(`url: expected an https URL, e.g. https://hooks.example.com/mfa (not ${parsed.protocol})`);
  }
  if (parsed.username || parsed.password) {
    throw refuse('url: must not carry credentials; the signature tells the receiver the event is ours');
  }
  if (allowPrivate) return parsed;
  const host = hostOf(parsed);
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookupAsync(host, { all: true })).map((found) => found.address);
  } catch {
    throw refuse(`url: the host ${host} does not resolve; give one with a public address`);
  }
  for (const address of addresses) {
    const kind = addressRefusal(address);
    if (kind) {
      throw refuse(
        `url: ${host} is a ${kind} address (${address}); webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true lifts this)`,
      );
    }
  }
  return parsed;
}

/** The URL's host, without an IPv6 literal's brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * A `lookup` for http.request that refuses a host resolving to any address a webhook may not go
 * to. The check is made on the addresses the connection then uses, so a DNS answer that changed
 * since the endpoint was created (DNS rebinding) is caught too.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.find((found) => addressRefusal(found.address));
    if (refused) {
      const kind = addressRefusal(refused.address);
      return callback(new DestinationRefused(`${hostname} resolves to a ${kind} address`), '', 0);
    }
    if (options.all) return (callback as unknown as (error: null, all: typeof addresses) => void)(null, addresses);
    const [first] = addresses;
    if (!first) return callback(new DestinationRefused(`${hostname} has no address`), '', 0);
    callback(null, first.address, first.family);
  });
};
