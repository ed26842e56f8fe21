import { randomUUID } from 'node:crypto';
import type { BaseLogger } from 'pino';
import { type Clock, onceAnHour } from '../clock.js';
import { noticeFor, type SecurityNotices } from '../notices/security-notices.js';
import type { SecurityEvent } from '../store/security-events.js';
import type { Store } from '../store/store.js';
import { enqueueWebhookEvent, webhookEventFor } from '../webhooks/outbox.js';

/** Who is asking: where the request came from (audit trail, per-address throttle) and its logger. */
export interface RequestContext {
  clientAddress?: string;
  /** The request's Accept-Language, for the texts it causes (an SMS), parsed only when one is sent. */
  acceptLanguage?: string;
  /** OpenID Connect ui_locales of a hosted sign-in (space-separated), preferred over Accept-Language. */
  uiLocales?: string;
  /** The request's User-Agent, for the notices that say from which browser (CONTRACT §20). */
  userAgent?: string;
  /** The request's logger: every line it writes carries the request id. */
  log: BaseLogger;
}

export type SecurityEventType =
  | 'login'
  | 'mfa_code_check'
  | 'mfa_enabled'
  | 'mfa_disabled'
  | 'factor_added'
  | 'factor_removed'
  | 'factor_made_default'
  | 'backup_code_used'
  | 'backup_codes_regenerated'
  | 'refresh_token_reuse'
  | 'authorization_code_replayed'
  | 'logout'
  | 'invite_issued'
  | 'invite_used'
  | 'password_changed'
  | 'password_removed'
  | 'email_code_check'
  | 'email_verified'
  | 'device_remembered'
  | 'operator_action'
  | 'operator_granted'
  | 'operator_revoked'
  | 'device_forgotten'
  | 'mfa_throttled'
  | 'user_deleted'
  | 'sms_country_paused'
  | 'sms_country_resumed'
  | 'recovery_started'
  | 'recovery_cancelled'
  | 'recovery_completed';

const HOUR_MS = 3_600_000;

/**
 * The security events kept in the database: time, user, client address and outcome, never a
 * secret. Those that are webhook events also go to the webhook outbox, and those that are security
 * notices to the user's address (CONTRACT §20), in the same transaction. Events older than
 * `retentionDays`, and the finished deliveries and messages of such events, are deleted (by each
 * node, at most once an hour).
 */
export function createAuditTrail({
  store,
  clock,
  retentionDays,
  notices,
}: {
  store: Store;
  clock: Clock;
  retentionDays: number;
  notices: SecurityNotices;
}) {
  const pruneDue = onceAnHour();

  /**
   * Records the event and, when it is a webhook event or a notice, puts it in the outbox. Pass
   * `tx`, the store of the transaction that makes the change, so that the event is written if and
   * only if the change is (CONTRACT §16: nothing lost).
   */
  async function record(
    type: SecurityEventType,
    outcome: string,
    facts: { userId?: string; context?: RequestContext; detail?: Record<string, string> },
    tx: Store = store,
  ): Promise<void> {
    const now = clock.now();
    const event = { occurredAt: now, userId: facts.userId, clientAddress: facts.context?.clientAddress };
    const webhookType = webhookEventFor(type, outcome);
    const notice = facts.userId ? noticeFor(type, outcome, facts.detail) : undefined;
    const write = async (on: Store) => {
      await on.securityEvents.insertSecurityEvent({ id: randomUUID(), type, outcome, detail: facts.detail, ...event });
      if (webhookType) await enqueueWebhookEvent(on, { type: webhookType, detail: facts.detail, ...event });
      if (notice && facts.userId) {
        await notices.queueNotice(on, notice, { userId: facts.userId, occurredAt: now, ...facts });
      }
    };
    // Alone (a throttle has no change to join), the event and its outbox rows still go together.
    await (webhookType || notice ? tx.transaction(write) : write(tx));
    // Only outside a caller's transaction: there a rollback would undo the pruning, and on SQLite
    // the service's store waits for that transaction's one connection, which waits for this.
    if (tx === store && pruneDue(now)) {
      const cutoff = new Date(now.getTime() - retentionDays * 24 * HOUR_MS);
      await store.securityEvents.deleteSecurityEventsBefore(cutoff);
      await store.webhooks.deleteFinishedDeliveriesBefore(cutoff);
      await store.outbox.deleteFinishedMessagesBefore(cutoff);
    }
  }

  /** The user's latest events, newest first. */
  function listEvents(userId: string, limit = 100): Promise<SecurityEvent[]> {
    return store.securityEvents.listSecurityEvents(userId, limit);
  }

  return { record, listEvents };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
