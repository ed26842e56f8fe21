import type { AttemptLimiter } from '../limits/attempt-limiter.js';

/**
 * CONTRACT §21: what holds a user's sign-ins back, for operators to see and lift: the wrong
 * passwords counted against their username and their second-factor guess budget (the address
 * throttle is not theirs alone, and stays).
 */
export function createUserThrottles({
  limiter,
  usernameScope,
  guessScopes,
}: {
  limiter: AttemptLimiter;
  usernameScope: (username: string) => string;
  guessScopes: (userId: string) => string[];
}) {
  const scopesOf = (user: { id: string; username: string }) => [usernameScope(user.username), ...guessScopes(user.id)];
  return {
    /** When the user's sign-ins may go on, or undefined when nothing holds them back now. */
    lockedUntil: (user: { id: string; username: string }) => limiter.blockedUntil(scopesOf(user)),
    /** Lifts every block of the user and forgets their failures. */
    unlock: (user: { id: string; username: string }) => limiter.unlock(scopesOf(user)),
  };
}

export type UserThrottles = ReturnType<typeof createUserThrottles>;
