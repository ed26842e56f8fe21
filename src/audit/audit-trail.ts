import { randomUUID } from 'node:crypto';
import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
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
  | 'password_reset_requested'
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
  | 'recovery_completed'
  | 'language_changed';

/**
 * The security events kept in the database: time, user, client address and outcome, never a
 * secret. Those that are webhook events also go to the webhook outbox, and those that are security
 * notices to the user's address (CONTRACT §20), in the same transaction. Events past the retention
 * window are deleted off the request path (retention/retention-worker.ts).
 */
export function createAuditTrail({ store, clock, notices }: { store: Store; clock: Clock; notices: SecurityNotices }) {
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
        await notices.queueNotice(on, notice, { userId: facts.userId, occurredAt: now, outcome, ...facts });
      }
    };
    // Alone (a throttle has no change to join), the event and its outbox rows still go together.
    await (webhookType || notice ? tx.transaction(write) : write(tx));
  }

  /** The user's latest events, newest first. */
  function listEvents(userId: string, limit = 100): Promise<SecurityEvent[]> {
    return store.securityEvents.listSecurityEvents(userId, limit);
  }

  return { record, listEvents };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
