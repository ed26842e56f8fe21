import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import { ServiceError } from '../errors.js';
import type { AttemptLimiter, AttemptPolicy } from '../limits/attempt-limiter.js';
import type { Store } from '../store/store.js';

/**
 * CONTRACT §13: five wrong second-factor proofs in a row are judged, then each attempt waits,
 * 60 s doubling to an hour; a success starts the count again. Beside it a day's budget that a
 * success does not restore: 50 judged failures, then one a day, so that an attacker who holds
 * the password (and whose victim keeps logging in) still gets at most 50 guesses in any 24 hours.
 */
const CONSECUTIVE: AttemptPolicy = { free: 5, firstWaitSeconds: 60, maxWaitSeconds: 3600, windowSeconds: 86_400 };
const DAILY: AttemptPolicy = { free: 50, firstWaitSeconds: 86_400, maxWaitSeconds: 86_400, windowSeconds: 86_400 };

/** One guess budget per user across every second factor (SMS, TOTP, WebAuthn, backup codes), shared by all nodes. */
export function createGuessBudget({ limiter, audit }: { limiter: AttemptLimiter; audit: AuditTrail }) {
  const scopes = (userId: string) => ({
    consecutive: { scope: `mfa:${userId}`, policy: CONSECUTIVE },
    daily: { scope: `mfa-day:${userId}`, policy: DAILY },
  });

  /**
   * Counts a second-factor attempt before it is judged; throws 429 `mfa_throttled` (with
   * Retry-After) when the user's budget is spent. `countedWith` runs in the same transaction once
   * the budget let the attempt through; what it throws undoes the count.
   */
  async function reserveGuess(
    userId: string,
    context: RequestContext,
    countedWith?: (store: Store) => Promise<void>,
  ): Promise<void> {
    const { consecutive, daily } = scopes(userId);
    const reservation = await limiter.reserve([consecutive, daily], countedWith);
    if (reservation.isAllowed) return;
    if (reservation.isFirstRefusal) await audit.record('mfa_throttled', 'refused', { userId, context });
    throw new ServiceError(
      'mfa_throttled',
      `too many wrong second-factor attempts; try again in ${reservation.retryAfterSeconds} s`,
      reservation.retryAfterSeconds,
    );
  }

  /** The proof was right: the run of failures ends, and the day's budget gets this attempt back. */
  async function guessSucceeded(userId: string): Promise<void> {
    const { consecutive, daily } = scopes(userId);
    await limiter.attemptWasRight(consecutive, daily);
  }

  /** The proof was wrong: it stays counted in both budgets. */
  async function guessFailed(userId: string): Promise<void> {
    const { consecutive, daily } = scopes(userId);
    await limiter.attemptWasWrong([consecutive, daily]);
  }

  /**
   * Runs `judge` as one counted guess: reserved first (429 past the budget; `countedWith`, another
   * count the guess must also pass, in the reservation's transaction, whose throw undoes both), then
   * settled by what `judge` answers, right (true) or wrong (false or a throw).
   */
  async function judgeGuess<T>(
    userId: string,
    context: RequestContext,
    judge: () => Promise<T | false>,
    countedWith?: (store: Store) => Promise<void>,
  ): Promise<T | false> {
    await reserveGuess(userId, context, countedWith);
    let verdict: T | false = false;
    try {
      verdict = await judge();
      return verdict;
    } finally {
      await (verdict === false ? guessFailed(userId) : guessSucceeded(userId));
    }
  }

  return {
    judgeGuess,
    /** The scopes the user's guesses are counted in. */
    scopesOf: (userId: string) => Object.values(scopes(userId)).map(({ scope }) => scope),
  };
}

export type GuessBudget = ReturnType<typeof createGuessBudget>;
