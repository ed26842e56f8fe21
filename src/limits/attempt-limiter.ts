import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { AttemptRule } from '../store/throttle.js';

/** How many attempts a scope may make, and how long it waits once they are used up. */
export interface AttemptPolicy {
  /** Attempts allowed before the first wait. */
  free: number;
  /** The first wait; each further attempt doubles it, up to `maxWaitSeconds`. */
  firstWaitSeconds: number;
  maxWaitSeconds: number;
  /** Attempts this long after the scope's last one count from 1 again. */
  windowSeconds: number;
}

export interface LimitedScope {
  scope: string;
  policy: AttemptPolicy;
}

export type Reservation =
  | { isAllowed: true }
  | {
      isAllowed: false;
      retryAfterSeconds: number;
      /** The scope that refused, and whether this is its block's first refusal (report it then, once). */
      refusedScope: string;
      isFirstRefusal: boolean;
    };

/**
 * No policy remembers an attempt, or makes a scope wait, longer than this: a scope whose last
 * attempt is older counts from 1 again and waits for nothing, exactly as one never seen, so its
 * row is deleted (by the retention worker, once an hour). Without it every address that ever tried kept a row.
 */
const FORGET_AFTER_SECONDS = 2 * 86_400;

/**
 * The retention worker's clean-up of the throttle: at most `limit` scopes whose last attempt is
 * older than any policy remembers, oldest first; returns how many.
 */
export function deleteForgottenAttempts(store: Store, now: Date, limit: number): Promise<number> {
  return store.throttle.deleteAttemptsBefore(new Date(now.getTime() - FORGET_AFTER_SECONDS * 1000), limit);
}

/** Attempts counted longer ago than this and still not settled are taken for abandoned (their node stopped). */
const IN_FLIGHT_SECONDS = 30;
/**
 * How long an attempt waits for the attempts in flight before it to be settled: while attempts keep
 * settling on this node it waits on (a busy address's queue is moving, only slowly under load), but
 * after WAIT_WITHOUT_PROGRESS_MS without any settling, or WAIT_AT_MOST_MS in all, the answer is 429
 * `attempts_in_flight`. A waiting attempt asks again when an attempt of its scope settles on this
 * node, and at the latest after POLL_MS (attempts settled by other nodes).
 */
const WAIT_WITHOUT_PROGRESS_MS = 20_000;
const WAIT_AT_MOST_MS = 120_000;
const POLL_MS = 250;

class Refused extends Error {
  constructor(readonly scope: string) {
    super(`attempt refused for ${scope}`);
  }
}

/**
 * Counts an attempt before it is judged (a password, a code), in every scope it belongs to at
 * once: the attempt is let through only if each scope has one left, so attempts racing each
 * other cannot all be judged before any is counted. Each reserved attempt is then settled: a
 * right one gives its count back, a wrong one leaves it. A scope that has no attempt left only
 * because others are still being judged is waited for, not refused: those may all be right (many
 * people behind one address log in at once), and only failures may refuse anyone.
 */
export function createAttemptLimiter({ store, clock }: { store: Store; clock: Clock }) {
  const inFlightSince = () => new Date(clock.now().getTime() - IN_FLIGHT_SECONDS * 1000);
  /** This node's waiting attempts, by the scope they wait for, oldest first. */
  const waiting = new Map<string, (() => void)[]>();

  /** Attempts settled on this node so far: a waiting attempt that sees it grow knows the queue moves. */
  let settledHere = 0;

  /** Resolves when an attempt of `scope` settles here (the oldest waiter first), or after `ms`. */
  function waitForSettlement(scope: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const queue = waiting.get(scope) ?? [];
      waiting.set(scope, queue);
      const timer = setTimeout(() => {
        const index = queue.indexOf(wake);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0) waiting.delete(scope);
        resolve();
      }, ms);
      function wake() {
        clearTimeout(timer);
        resolve();
      }
      queue.push(wake);
    });
  }

  /** An attempt settled: the oldest attempt waiting for each of its scopes asks again now. */
  function wakeNext(scopes: LimitedScope[]): void {
    settledHere += 1;
    for (const { scope } of scopes) {
      const queue = waiting.get(scope);
      queue?.shift()?.();
      if (queue?.length === 0) waiting.delete(scope);
    }
  }

  /**
   * Reserves one attempt in every scope, or in none; waits while attempts in flight may free one.
   * `alongside`, when given, runs in the reservation's transaction once every scope has counted the
   * attempt: what it throws undoes the reservation, and is thrown.
   */
  async function reserve(scopes: LimitedScope[], alongside?: (store: Store) => Promise<void>): Promise<Reservation> {
    const giveUpAt = performance.now() + WAIT_AT_MOST_MS;
    let progressDeadline = performance.now() + WAIT_WITHOUT_PROGRESS_MS;
    for (;;) {
      const outcome = await tryReserve(scopes, alongside);
      if (!('busyScope' in outcome)) return outcome;
      const left = Math.min(giveUpAt, progressDeadline) - performance.now();
      if (left <= 0) throw inFlightError();
      const settledBefore = settledHere;
      await waitForSettlement(outcome.busyScope, Math.min(left, POLL_MS));
      if (settledHere > settledBefore) progressDeadline = performance.now() + WAIT_WITHOUT_PROGRESS_MS;
    }
  }

  async function tryReserve(
    scopes: LimitedScope[],
    alongside?: (store: Store) => Promise<void>,
  ): Promise<Reservation | { busyScope: string }> {
    const now = clock.now();
    const attempts = scopes.map(({ scope, policy }) => ({ scope, rule: ruleFor(policy, now) }));
    try {
      await store.transaction(async (tx) => {
        const counted = await tx.throttle.reserveAttempts(attempts, now, inFlightSince());
        const refused = attempts.find(({ scope }) => !counted.includes(scope));
        if (refused) throw new Refused(refused.scope);
        await alongside?.(tx);
      });
      return { isAllowed: true };
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      const noted = await store.throttle.noteRefusal(error.scope, now, inFlightSince());
      // Neither busy nor blocked: the attempts in flight that took the last free one were settled
      // between the two reads (right ones give it back). Not a failure: ask again.
      if (!noted || noted.isBusy) return { busyScope: error.scope };
      const waitMs = noted.blockedUntil.getTime() - now.getTime();
      return {
        isAllowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        refusedScope: error.scope,
        isFirstRefusal: noted.isFirstRefusal,
      };
    }
  }

  return {
    reserve,
    /**
     * The reserved attempt was right: every failure counted in `forget` is forgotten, and
     * `giveBack` (a budget a success does not restore) gets this attempt back.
     */
    async attemptWasRight(forget: LimitedScope, giveBack?: LimitedScope): Promise<void> {
      await store.throttle.settleRightAttempt(
        clock.now(),
        inFlightSince(),
        countedScope(forget),
        giveBack && countedScope(giveBack),
      );
      wakeNext(giveBack ? [forget, giveBack] : [forget]);
    },
    /** When the last of the scopes' blocks ends, or undefined when none is blocked now. */
    blockedUntil(scopes: string[]): Promise<Date | undefined> {
      return store.throttle.findBlockedUntil(scopes, clock.now());
    },
    /** Lifts the scopes' blocks and forgets their failures (an operator's unlock). */
    async unlock(scopes: string[]): Promise<void> {
      await store.throttle.clearFailures(scopes);
    },
    /** The reserved attempt was wrong: it stays counted in every scope. */
    async attemptWasWrong(scopes: LimitedScope[]): Promise<void> {
      await store.throttle.settleWrongAttempt(scopes.map(({ scope }) => scope));
      wakeNext(scopes);
    },
  };
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>;

function countedScope({ scope, policy }: LimitedScope) {
  return { scope, free: policy.free };
}

/** CONTRACT §13: a 429 names what was exceeded; this one is load (attempts being judged), never failures. */
function inFlightError(): ServiceError {
  return new ServiceError(
    'attempts_in_flight',
    'too many attempts from here are being checked at this moment; try again in a second',
    1,
  );
}

/** The policy worked out for an attempt made `now`: its window and the end of each wait it can earn. */
function ruleFor(policy: AttemptPolicy, now: Date): AttemptRule {
  if (policy.windowSeconds > FORGET_AFTER_SECONDS || policy.maxWaitSeconds > FORGET_AFTER_SECONDS) {
    throw new Error(`an attempt policy may remember and wait ${FORGET_AFTER_SECONDS} s at most`);
  }
  const blockEnds: Date[] = [];
  for (let wait = policy.firstWaitSeconds; ; wait *= 2) {
    blockEnds.push(new Date(now.getTime() + Math.min(wait, policy.maxWaitSeconds) * 1000));
    if (wait >= policy.maxWaitSeconds) break;
  }
  return { free: policy.free, windowStart: new Date(now.getTime() - policy.windowSeconds * 1000), blockEnds };
}
