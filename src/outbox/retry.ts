const FIRST_RETRY_SECONDS = 5;
const MAX_WAIT_SECONDS = 3600;
/** CONTRACT §16: both outboxes retry for 24 hours. */
export const RETRY_FOR_SECONDS = 86_400;

/**
 * When the next attempt is due after attempt `attempt` failed at `now`: 5 s doubling to an hour,
 * each wait jittered to between half and all of it (so the receivers of a burst are not hit in
 * step), never later than `giveUpAt` (24 hours after the event unless given); undefined once that
 * time has come.
 */
export function nextAttemptAt(
  createdAt: Date,
  attempt: number,
  now: Date,
  random = Math.random,
  giveUpAt = new Date(createdAt.getTime() + RETRY_FOR_SECONDS * 1000),
): Date | undefined {
  if (now.getTime() >= giveUpAt.getTime()) return undefined;
  const waitSeconds = Math.min(FIRST_RETRY_SECONDS * 2 ** (attempt - 1), MAX_WAIT_SECONDS) * (0.5 + random() / 2);
  return new Date(Math.min(now.getTime() + waitSeconds * 1000, giveUpAt.getTime()));
}
