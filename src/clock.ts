/** The time source; tests pass one they can move forward instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

const HOUR_MS = 3_600_000;

/**
 * For clean-ups that need not run on every call: the returned check is true on its first call and
 * then at most once an hour (per node), by the times it is given.
 */
export function onceAnHour(): (now: Date) => boolean {
  let lastAt = Number.NEGATIVE_INFINITY;
  return (now) => {
    if (now.getTime() - lastAt < HOUR_MS) return false;
    lastAt = now.getTime();
    return true;
  };
}
