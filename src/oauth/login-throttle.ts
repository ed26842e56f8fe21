import { isIPv6 } from 'node:net';
import type { RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { keyedHash } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

/** Failures allowed per window before each further one earns a growing wait. */
const FREE_FAILURES: Record<'username' | 'address', number> = { username: 5, address: 20 };
const WINDOW_MS = 15 * 60_000;
/** The longest wait: a locked-out owner waits at most this long, never forever. */
const MAX_BLOCK_SECONDS = 15 * 60;

export interface LoginThrottleDeps {
  store: Store;
  clock: Clock;
  /** Keys the username scopes, so the table does not list the usernames tried. */
  throttleKey: Buffer;
}

/**
 * Slows down password guessing per username and per client address. Unknown usernames are
 * throttled exactly like known ones, so the answer reveals nothing about who exists.
 */
export function createLoginThrottle({ store, clock, throttleKey }: LoginThrottleDeps) {
  function usernameScope(username: string) {
    return { scope: `user:${keyedHash(throttleKey, 'login-username', username)}`, free: FREE_FAILURES.username };
  }

  function scopes(username: string, context: RequestContext) {
    const result = [usernameScope(username)];
    if (context.clientAddress) {
      result.push({ scope: `address:${clientNetwork(context.clientAddress)}`, free: FREE_FAILURES.address });
    }
    return result;
  }

  /** Throws 429 `login_throttled` (with Retry-After) while the username or the address must wait. */
  async function checkLoginAllowed(username: string, context: RequestContext): Promise<void> {
    const now = clock.now();
    for (const { scope } of scopes(username, context)) {
      const blockedUntil = await store.loginThrottle.findBlockedUntil(scope, now);
      if (blockedUntil) {
        const retryAfterSeconds = Math.max(1, Math.ceil((blockedUntil.getTime() - now.getTime()) / 1000));
        throw new ServiceError(
          'login_throttled',
          'too many failed logins; wait before trying again',
          retryAfterSeconds,
        );
      }
    }
  }

  /** Counts a failed login; past the free failures each one doubles the wait (2 s, 4 s, … 15 min). */
  async function recordFailure(username: string, context: RequestContext): Promise<void> {
    const now = clock.now();
    for (const { scope, free } of scopes(username, context)) {
      const failures = await store.loginThrottle.countFailure(scope, now, new Date(now.getTime() - WINDOW_MS));
      if (failures > free) {
        const waitSeconds = Math.min(2 ** Math.min(failures - free, 20), MAX_BLOCK_SECONDS);
        await store.loginThrottle.setBlockedUntil(scope, new Date(now.getTime() + waitSeconds * 1000));
      }
    }
  }

  /** A successful login clears its username's failures (not its address's: one address, many users). */
  async function recordSuccess(username: string): Promise<void> {
    await store.loginThrottle.clearFailures(usernameScope(username).scope);
  }

  return { checkLoginAllowed, recordFailure, recordSuccess };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;

/**
 * What one client controls: an IPv4 address, or the /64 of an IPv6 one (a single host is usually
 * given a whole /64, and would otherwise get 2^64 fresh address limits).
 */
export function clientNetwork(address: string): string {
  if (!isIPv6(address)) return address;
  const mappedIPv4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mappedIPv4?.[1]) return mappedIPv4[1];
  const [head = '', tail] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
