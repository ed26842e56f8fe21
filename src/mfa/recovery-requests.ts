import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import { translate } from '../i18n/messages.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import type { PasswordCheck } from '../oauth/password-check.js';
import type { MessageOutbox } from '../outbox/message-outbox.js';
import type { RecoveryState } from '../store/database.js';
import type { Store } from '../store/store.js';
import type { StoredUser } from '../store/users.js';
import { ownersLanguage } from '../users/languages.js';
import type { MfaRemoval } from './mfa-removal.js';

/** What GET /mfa/recovery-request/ shows: `none` (and no `readyAt`) when the user never asked. */
export interface RecoveryStatus {
  state: 'none' | RecoveryState;
  readyAt?: Date;
}

export interface RecoveryRequestDeps {
  store: Store;
  passwords: PasswordCheck;
  removal: MfaRemoval;
  audit: AuditTrail;
  outbox: MessageOutbox;
  metrics: ServiceMetrics;
  clock: Clock;
  /** RECOVERY_DELAY: how long a request waits before the factors may be removed. */
  delaySeconds: number;
  serviceName: string;
}

const DAY_MS = 86_400_000;
/** How many recovery requests may start per user per UTC day (each texts every enrolled number). */
const STARTS_PER_DAY = 3;

/** A sign-in proved more than the password: it cancels a waiting recovery (CONTRACT §20). */
export function provesSecondFactor(amr: readonly string[]): boolean {
  return amr.some((method) => method !== 'pwd');
}

/**
 * CONTRACT §20, recovery when every factor is lost: the password alone asks; the request waits
 * RECOVERY_DELAY while every channel of the account is told (the audit trail's notice by email and
 * webhook, an SMS to each enrolled number through the outbox); any sign-in with a second factor,
 * or the user from any login, cancels it; after the delay the password removes every factor. An
 * attacker who has only the password is seen, and stopped, by the owner in that time.
 */
export function createRecoveryRequests(deps: RecoveryRequestDeps) {
  const { store, passwords, removal, audit, outbox, metrics, clock, delaySeconds, serviceName } = deps;

  /**
   * Starts a request for the user whose password this is, or answers the one waiting. Throws the
   * password grant's `invalid_grant` and `login_throttled` (the same throttle), 409
   * `mfa_not_enabled` when the account has no second factor to recover from.
   */
  async function startRecovery(username: string, password: string, context: RequestContext): Promise<Date> {
    const user = await passwords.checkPassword(username, password, context);
    if (user.factors.length === 0) {
      throw new ServiceError(
        'mfa_not_enabled',
        'this account has no second factor to recover from: sign in with the password alone',
      );
    }
    const now = clock.now();
    const readyAt = new Date(now.getTime() + delaySeconds * 1000);
    // Told to the owner, whoever asked: in the owner's stored language, never the asker's (as
    // security-notices.ts does).
    const language = await ownersLanguage(store, user.id);
    const isStarted = await store.transaction(async (tx) => {
      const id = randomUUID();
      if (!(await tx.recoveryRequests.startRecoveryRequest({ id, userId: user.id, readyAt, createdAt: now }))) {
        return false;
      }
      // Each start texts every enrolled number, outside §15's enrolment budgets: so a few a day.
      const day = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS);
      if (!(await tx.smsQuota.incrementCounter(`recovery-user:${user.id}`, day, STARTS_PER_DAY))) {
        throw new ServiceError(
          'recovery_rate_limited',
          `this account has had ${STARTS_PER_DAY} recovery requests today; try again tomorrow`,
          Math.ceil((day.getTime() + DAY_MS - now.getTime()) / 1000),
        );
      }
      // The email notice and the webhook come with the audit event, in this transaction.
      const detail = { ready_at: readyAt.toISOString() };
      await audit.record('recovery_started', 'succeeded', { userId: user.id, context, detail }, tx);
      for (const factor of user.factors) {
        if (factor.type !== 'sms' || !factor.phoneNumber) continue;
        await outbox.queueSms(
          tx,
          { phoneNumber: factor.phoneNumber, body: translate(language, 'recovery_sms', { service: serviceName }) },
          { kind: 'recovery_sms', userId: user.id },
        );
      }
      return true;
    });
    if (isStarted) {
      metrics.recoveryStep('started');
      return readyAt;
    }
    // One was waiting: that one is the answer (its owner was told when it started).
    const waiting = await store.recoveryRequests.findRecoveryRequest(user.id);
    return waiting?.readyAt ?? readyAt;
  }

  /**
   * Completes the user's request once it is ready: every factor and backup code goes and every
   * login ends, in one transaction with the request's end. Throws 409 `recovery_waiting` (with
   * `ready_at` and Retry-After) before then, 409 `no_recovery_request` when none waits.
   */
  async function completeRecovery(user: StoredUser, context: RequestContext): Promise<void> {
    const now = clock.now();
    const isCompleted = await store.transaction(async (tx) => {
      // The conditional update settles races: of two completions at once, one removes the factors.
      if (!(await tx.recoveryRequests.endRecoveryRequest(user.id, 'completed', now))) return false;
      await removal.removeAllFactors(user.id, { by: 'recovery', context }, tx);
      await audit.record('recovery_completed', 'succeeded', { userId: user.id, context }, tx);
      return true;
    });
    if (isCompleted) {
      metrics.recoveryStep('completed');
      return;
    }
    const current = await store.recoveryRequests.findRecoveryRequest(user.id);
    if (current?.state === 'waiting') {
      const readyAt = current.readyAt.toISOString();
      throw new ServiceError(
        'recovery_waiting',
        `the recovery request is ready at ${readyAt}; until then any sign-in with a second factor cancels it`,
        Math.max(1, Math.ceil((current.readyAt.getTime() - now.getTime()) / 1000)),
        { ready_at: readyAt },
      );
    }
    throw new ServiceError(
      'no_recovery_request',
      'no recovery request is waiting (none was made, or it was cancelled by a sign-in with a second factor or from the account); ask with POST /mfa/recovery-request/',
    );
  }

  /** The user's latest request. */
  async function describeRecovery(userId: string): Promise<RecoveryStatus> {
    const current = await store.recoveryRequests.findRecoveryRequest(userId);
    return current ? { state: current.state, readyAt: current.readyAt } : { state: 'none' };
  }

  /**
   * Cancels the user's waiting request, if one waits: asked by the user (`by_user`) or by a sign-in
   * with a second factor (`by_sign_in`). A read first: the sign-ins that find none write nothing.
   */
  async function cancelRecovery(
    userId: string,
    cause: 'by_user' | 'by_sign_in',
    context: RequestContext,
  ): Promise<void> {
    if ((await store.recoveryRequests.findRecoveryRequest(userId))?.state !== 'waiting') return;
    const isCancelled = await store.transaction(async (tx) => {
      if (!(await tx.recoveryRequests.endRecoveryRequest(userId, 'cancelled', clock.now()))) return false;
      await audit.record('recovery_cancelled', cause, { userId, context }, tx);
      return true;
    });
    if (isCancelled) metrics.recoveryStep('cancelled');
  }

  return { startRecovery, completeRecovery, describeRecovery, cancelRecovery };
}

export type RecoveryRequests = ReturnType<typeof createRecoveryRequests>;
