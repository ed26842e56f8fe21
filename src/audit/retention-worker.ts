import { setImmediate as nextTurn } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';

const JOB_NAME = 'audit_retention';
const HOUR_MS = 3_600_000;
/** Rows per delete: each is a short write, and requests run between two (SQLite has one writer). */
const BATCH_ROWS = 500;

export interface RetentionWorkerDeps {
  store: Store;
  clock: Clock;
  retentionDays: number;
  log: BaseLogger;
  /** How often a node asks whether the hour's clean-up is due (tests shorten it). */
  checkEveryMs?: number;
}

/**
 * Deletes the security events older than `retentionDays`, and the finished webhook deliveries and
 * outbox messages (mail, SMS) of that age, off the request path: a real timer (unref'd) asks every minute whether the job is
 * due by the clock; once an hour, the one node whose claim moves the job's due time runs it, in
 * batches of a few hundred rows read from an index on time. A run cut short (shutdown, a failed
 * statement) leaves the rest for the next hour.
 */
export function createRetentionWorker({
  store,
  clock,
  retentionDays,
  log,
  checkEveryMs = 60_000,
}: RetentionWorkerDeps) {
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;
  let isRunning = false;

  function schedule(delayMs: number) {
    if (!isRunning) return;
    timer = setTimeout(() => {
      checking = runIfDue()
        .catch((error) => log.error({ err: error }, 'retention clean-up failed; it is tried again in an hour'))
        .finally(() => {
          checking = undefined;
          schedule(checkEveryMs);
        });
    }, delayMs);
    timer.unref();
  }

  async function runIfDue() {
    const now = clock.now();
    if (!(await store.scheduledJobs.claimDueJob(JOB_NAME, now, new Date(now.getTime() + HOUR_MS)))) return;
    const cutoff = new Date(now.getTime() - retentionDays * 24 * HOUR_MS);
    const events = await inBatches((limit) => store.securityEvents.deleteSecurityEventsBefore(cutoff, limit));
    const deliveries = await inBatches((limit) => store.webhooks.deleteFinishedDeliveriesBefore(cutoff, limit));
    const messages = await inBatches((limit) => store.outbox.deleteFinishedMessagesBefore(cutoff, limit));
    if (events + deliveries + messages > 0) {
      log.info(
        {
          security_events: events,
          webhook_deliveries: deliveries,
          outbox_messages: messages,
          before: cutoff.toISOString(),
        },
        'retention clean-up done',
      );
    }
  }

  /** Deletes batch after batch until one comes back short (or the worker stops); returns the total. */
  async function inBatches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    while (isRunning) {
      const deleted = await deleteBatch(BATCH_ROWS);
      total += deleted;
      if (deleted < BATCH_ROWS) break;
      await nextTurn();
    }
    return total;
  }

  return {
    start() {
      if (isRunning) return;
      isRunning = true;
      schedule(0);
    },
    /** Stops the timer and waits for a batch under way (not the whole run). */
    async stop() {
      isRunning = false;
      clearTimeout(timer);
      await checking;
    },
  };
}
