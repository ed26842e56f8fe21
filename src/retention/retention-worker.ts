import { setImmediate as nextTurn } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import { deleteForgottenAttempts } from '../limits/attempt-limiter.js';
import { countryScope, historyStart, startOfHour } from '../mfa/country-budgets.js';
import { deleteForgottenAuthorizationCodes } from '../oauth/authorization-codes.js';
import type { Store } from '../store/store.js';

const HOUR_MS = 3_600_000;
/** Rows per delete: each is a short write, and requests run between two (SQLite has one writer). */
const BATCH_ROWS = 500;

/** The console's chart of sign-ins per hour reaches a week back (GET /admin/stats/sign-ins, 168 hours at most). */
const SIGN_IN_HOURS_SHOWN = 168;
/** Settled hours counted a statement: about 25 000 login events at ten million audit rows over 100 days. */
const SIGN_IN_HOURS_PER_BATCH = 6;

/** Deletes at most `limit` rows of one kind, oldest first, as of `now`; returns how many. */
type DeleteBatch = (store: Store, now: Date, limit: number) => Promise<number>;

/**
 * One hourly clean-up: its row in `scheduled_job` (which node runs it is settled there), the
 * message it logs when it deleted anything, and what it deletes, by the name each count is logged under.
 */
interface RetentionJob {
  name: string;
  doneMessage: string;
  deletes: Record<string, DeleteBatch>;
}

/** The audit trail and the outboxes' finished rows past the retention (AUDIT_RETENTION_DAYS). */
function auditRetention(retentionDays: number): RetentionJob {
  const cutoffOf = (now: Date) => new Date(now.getTime() - retentionDays * 24 * HOUR_MS);
  return {
    name: 'audit_retention',
    doneMessage: 'retention clean-up done',
    deletes: {
      security_events: (store, now, limit) => store.securityEvents.deleteSecurityEventsBefore(cutoffOf(now), limit),
      webhook_deliveries: (store, now, limit) => store.webhooks.deleteFinishedDeliveriesBefore(cutoffOf(now), limit),
      outbox_messages: (store, now, limit) => store.outbox.deleteFinishedMessagesBefore(cutoffOf(now), limit),
    },
  };
}

/**
 * Rows that can no longer be used, each by its own rule (the domain's where it has one). These
 * ran inside whichever request came first in the hour on each node (issue 33).
 */
const EXPIRED_ROWS: RetentionJob = {
  name: 'expired_rows',
  doneMessage: 'expired rows clean-up done',
  deletes: {
    refresh_tokens: (store, now, limit) => store.refreshTokens.deleteExpiredRefreshTokens(now, limit),
    sign_in_sessions: (store, now, limit) => store.signInSessions.deleteExpiredSignInSessions(now, limit),
    remembered_devices: (store, now, limit) => store.rememberedDevices.deleteExpiredRememberedDevices(now, limit),
    mfa_tokens: (store, now, limit) => store.mfaTokens.deleteExpiredMfaTokens(now, limit),
    authorization_codes: deleteForgottenAuthorizationCodes,
    invites: (store, now, limit) => store.invites.deleteInvitesBefore(now, limit),
    passkey_sign_in_challenges: (store, now, limit) =>
      store.passkeySignIns.deleteSignInChallengeBatchBefore(now, limit),
    // Every budget counts by clock hour; the anomaly pause reads a week of the countries' counters.
    sms_counters: (store, now, limit) => {
      const hour = startOfHour(now);
      return store.smsQuota.deleteStaleCounterBatch(
        hour,
        { scopePrefix: countryScope(''), since: historyStart(hour) },
        limit,
      );
    },
    login_throttle: deleteForgottenAttempts,
    // The console's chart reaches a week back; the hours before it are never shown again.
    sign_in_hours: (store, now, limit) => store.operatorViews.deleteSignInHoursBefore(weekShownSince(now), limit),
  },
};

/** The first hour the console's chart of sign-ins per hour shows as of `now`. */
function weekShownSince(now: Date): Date {
  return new Date(now.getTime() - (now.getTime() % HOUR_MS) - (SIGN_IN_HOURS_SHOWN - 1) * HOUR_MS);
}

export interface RetentionWorkerDeps {
  store: Store;
  clock: Clock;
  retentionDays: number;
  log: BaseLogger;
  /** How often a node asks whether an hourly clean-up is due (tests shorten it). */
  checkEveryMs?: number;
}

/**
 * The hourly clean-ups, off the request path (and, at each check, the console's sign-ins of the
 * hours just settled: keepSignInHoursCounted): the security events older than `retentionDays` and
 * the finished webhook deliveries and outbox messages (mail, SMS) of that age; and the rows past
 * their end (refresh tokens, sign-in sessions, remembered devices, MFA tokens, authorization
 * codes, invites, passkey challenges, SMS counters, the login throttle's stale counts). A real
 * timer (unref'd) asks every minute whether each job is due by the clock; once an hour, the one
 * node whose claim moves the job's due time runs it, in batches of a few hundred rows read from an
 * index on time. A run cut short (shutdown, a failed statement) leaves the rest for the next hour.
 */
export function createRetentionWorker({
  store,
  clock,
  retentionDays,
  log,
  checkEveryMs = 60_000,
}: RetentionWorkerDeps) {
  const jobs = [auditRetention(retentionDays), EXPIRED_ROWS];
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;
  let isRunning = false;

  function schedule(delayMs: number) {
    if (!isRunning) return;
    timer = setTimeout(() => {
      checking = runDueJobs().finally(() => {
        checking = undefined;
        schedule(checkEveryMs);
      });
    }, delayMs);
    timer.unref();
  }

  async function runDueJobs() {
    for (const job of jobs) {
      if (!isRunning) return;
      try {
        await runIfDue(job);
      } catch (error) {
        // The claim itself failed (the database is away): the next check asks again.
        log.error({ err: error, job: job.name }, `${job.name} clean-up failed`);
      }
    }
    // After the claims: at a first start on a large audit trail this counts a week of logins.
    try {
      await keepSignInHoursCounted();
    } catch (error) {
      log.error({ err: error }, 'counting the settled hours of sign-ins failed; tried again at the next check');
    }
  }

  async function runIfDue(job: RetentionJob) {
    const now = clock.now();
    if (!(await store.scheduledJobs.claimDueJob(job.name, now, new Date(now.getTime() + HOUR_MS)))) return;
    const counts: Record<string, number> = {};
    for (const [rows, deleteBatch] of Object.entries(job.deletes)) {
      // One kind failing (a statement refused) leaves the others to run this hour.
      try {
        counts[rows] = await inBatches((limit) => deleteBatch(store, now, limit));
      } catch (error) {
        log.error(
          { err: error, job: job.name, rows },
          `${job.name} clean-up of ${rows} failed; tried again in an hour`,
        );
      }
    }
    if (Object.values(counts).some((count) => count > 0))
      log.info({ ...counts, as_of: now.toISOString() }, job.doneMessage);
  }

  /**
   * Every node, at each check: the settled hours of the week whose sign-ins the console's chart
   * has not kept yet are counted, a few hours a statement, so that its requests find them kept. At
   * the first start on a large audit trail that is the week; after it, the hour just settled.
   */
  async function keepSignInHoursCounted() {
    const now = clock.now();
    while (isRunning) {
      const kept = await store.operatorViews.keepSettledSignInHours(weekShownSince(now), now, SIGN_IN_HOURS_PER_BATCH);
      if (kept < SIGN_IN_HOURS_PER_BATCH) break;
      await nextTurn();
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
