/** The time source; tests pass one they can move forward instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
