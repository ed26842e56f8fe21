import type { BaseLogger } from 'pino';

export interface ClaimLoopOptions<T extends { id: string }> {
  /** Names the queue in log lines: `webhook outbox`, `message outbox`. */
  queue: string;
  /** Claims up to `limit` due items, none of `exceptIds` (those still under way here). */
  claim(limit: number, exceptIds: string[]): Promise<T[]>;
  /** Runs one claimed item; never throws. */
  run(item: T): Promise<unknown>;
  maxInFlight: number;
  pollIntervalMs: number;
  log: BaseLogger;
}

/**
 * The polling both outboxes' workers share: every `pollIntervalMs` (real timers, unref'd), or at
 * once while claims fill the room, it claims due items up to `maxInFlight` under way and runs each.
 * A database that cannot be read is logged once per outage, and polled again.
 */
export function createClaimLoop<T extends { id: string }>(options: ClaimLoopOptions<T>) {
  const { queue, claim, run, maxInFlight, pollIntervalMs, log } = options;
  /** The items under way, by id. */
  const inFlight = new Map<string, Promise<unknown>>();
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | undefined;
  let isRunning = false;
  let isFailing = false;

  function schedule(delayMs: number) {
    if (!isRunning) return;
    timer = setTimeout(() => {
      polling = poll().finally(() => {
        polling = undefined;
      });
    }, delayMs);
    timer.unref();
  }

  async function poll() {
    const room = maxInFlight - inFlight.size;
    let claimed: T[] = [];
    if (room > 0) {
      try {
        // Never two attempts at one item from one node, even if the clock has passed its lease.
        claimed = await claim(room, [...inFlight.keys()]);
        if (isFailing) log.info(`${queue} readable again`);
        isFailing = false;
      } catch (error) {
        if (!isFailing) log.error({ err: error }, `${queue} cannot be read; retrying`);
        isFailing = true;
      }
    }
    for (const item of claimed) track(item.id, run(item));
    schedule(claimed.length > 0 && claimed.length === room ? 0 : pollIntervalMs);
  }

  /** Counts `running` as under way until it settles (an item claimed elsewhere, say). */
  function track<R>(id: string, running: Promise<R>): Promise<R> {
    const settled = running.finally(() => inFlight.delete(id));
    inFlight.set(id, settled);
    return settled;
  }

  return {
    track,
    start() {
      if (isRunning) return;
      isRunning = true;
      schedule(0);
    },
    /** Stops polling; answers once no poll is running. What is under way goes on (`underWay`). */
    async halt() {
      isRunning = false;
      clearTimeout(timer);
      await polling;
    },
    underWay: () => [...inFlight.values()],
  };
}
