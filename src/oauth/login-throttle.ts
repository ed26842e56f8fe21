import { isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import { keyedHash } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { AttemptLimiter, AttemptPolicy, LimitedScope } from '../limits/attempt-limiter.js';
import { foldUsername } from '../users/accounts.js';

/**
 * Five wrong passwords per username (twenty per address) are judged; from then on each attempt
 * waits, 2 s doubling to 15 min. Failures 15 minutes old are forgotten.
 */
const POLICIES: Record<'username' | 'address', AttemptPolicy> = {
  username: { free: 5, firstWaitSeconds: 2, maxWaitSeconds: 15 * 60, windowSeconds: 15 * 60 },
  address: { free: 20, firstWaitSeconds: 2, maxWaitSeconds: 15 * 60, windowSeconds: 15 * 60 },
};

export interface LoginThrottleDeps {
  limiter: AttemptLimiter;
  audit: AuditTrail;
  /** Keys the username scopes, so the table does not list the usernames tried. */
  throttleKey: Buffer;
}

/** A login attempt counted against its username and address before the password is checked. */
export interface LoginAttempt {
  username: LimitedScope;
  address?: LimitedScope;
}

/**
 * Slows down password guessing per username and per client address. Each attempt is counted
 * before Argon2 runs, so simultaneous guesses cannot all be judged before any is counted.
 * Unknown usernames are throttled exactly like known ones, so the answer reveals nothing.
 */
export function createLoginThrottle({ limiter, audit, throttleKey }: LoginThrottleDeps) {
  /** The scope a username's wrong passwords are counted in. */
  function usernameScope(username: string): string {
    return `user:${keyedHash(throttleKey, 'login-username', foldUsername(username))}`;
  }

  /**
   * Counts the attempt; throws 429 `login_throttled` (with Retry-After) while the username or
   * address must wait. `userId`: the account of that username, named in the audit event.
   */
  async function reserveLogin(username: string, context: RequestContext, userId?: string): Promise<LoginAttempt> {
    const attempt: LoginAttempt = {
      username: { scope: usernameScope(username), policy: POLICIES.username },
      address: context.clientAddress
        ? { scope: `address:${clientNetwork(context.clientAddress)}`, policy: POLICIES.address }
        : undefined,
    };
    const reservation = await limiter.reserve(scopesOf(attempt));
    if (reservation.isAllowed) return attempt;
    // One audit row per block, not one per refused request of a burst.
    if (reservation.isFirstRefusal) {
      await audit.record('login', 'throttled', {
        userId,
        context,
        detail: { limit: reservation.refusedScope.split(':')[0] ?? '' },
      });
    }
    throw new ServiceError(
      'login_throttled',
      `too many failed logins; try again in ${reservation.retryAfterSeconds} s`,
      reservation.retryAfterSeconds,
    );
  }

  /**
   * The password was right: the username's failures are forgotten (its owner is back), and the
   * address gets back the attempt counted for this login (one address, many users).
   */
  async function loginSucceeded(attempt: LoginAttempt): Promise<void> {
    await limiter.attemptWasRight(attempt.username, attempt.address);
  }

  /** The password was wrong: the attempt stays counted against the username and the address. */
  async function loginFailed(attempt: LoginAttempt): Promise<void> {
    await limiter.attemptWasWrong(scopesOf(attempt));
  }

  return { reserveLogin, loginSucceeded, loginFailed, usernameScope };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;

function scopesOf(attempt: LoginAttempt): LimitedScope[] {
  return attempt.address ? [attempt.username, attempt.address] : [attempt.username];
}

/**
 * What one client controls: an IPv4 address, or the /64 of an IPv6 one (a single host is usually
 * given a whole /64, and would otherwise get 2^64 fresh address limits).
 */
export function clientNetwork(address: string): string {
  if (!isIPv6(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${ip.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
