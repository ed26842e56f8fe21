import { type Clock, onceAnHour } from '../clock.js';
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
 * row is deleted (once an hour per node). Without it every address that ever tried kept a row.
 */
const FORGET_AFTER_SECONDS = 2 * 86_400;

class Refused extends Error {
  constructor(readonly scope: string) {
    super(`attempt refused for ${scope}`);
  }
}

/**
 * Counts an attempt before it is judged (a password, a code), in every scope it belongs to at
 * once: the attempt is let through only if each scope has one left, so attempts racing each
 * other cannot all be judged before any is counted. A right attempt gives its count back.
 */
export function createAttemptLimiter({ store, clock }: { store: Store; clock: Clock }) {
  const pruneDue = onceAnHour();

  /** Reserves one attempt in every scope, or in none. */
  async function reserve(scopes: LimitedScope[]): Promise<Reservation> {
    const now = clock.now();
    if (pruneDue(now)) await store.throttle.deleteAttemptsBefore(new Date(now.getTime() - FORGET_AFTER_SECONDS * 1000));
    const attempts = scopes.map(({ scope, policy }) => ({ scope, rule: ruleFor(policy, now) }));
    try {
      await store.transaction(async (tx) => {
        const counted = await tx.throttle.reserveAttempts(attempts, now);
        const refused = attempts.find(({ scope }) => !counted.includes(scope));
        if (refused) throw new Refused(refused.scope);
      });
      return { isAllowed: true };
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      const noted = await store.throttle.noteRefusal(error.scope, now);
      const waitMs = (noted?.blockedUntil.getTime() ?? now.getTime()) - now.getTime();
      return {
        isAllowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        refusedScope: error.scope,
        isFirstRefusal: noted?.isFirstRefusal ?? false,
      };
    }
  }

  return {
    reserve,
    /**
     * The attempt was right: every attempt counted in `forget` is forgotten, and `giveBack` (a
     * budget a success does not restore) gets this one back.
     */
    attemptWasRight: (forget: string, giveBack?: string) =>
      store.throttle.settleRightAttempt(clock.now(), forget, giveBack),
  };
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>;

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
