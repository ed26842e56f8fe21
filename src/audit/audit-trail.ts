import { randomUUID } from 'node:crypto';
import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import type { SecurityEvent } from '../store/security-events.js';
import type { Store } from '../store/store.js';

/** Who is asking: where the request came from (audit trail, per-address throttle) and its logger. */
export interface RequestContext {
  clientAddress?: string;
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
  | 'mfa_throttled'
  | 'user_deleted'
  | 'sms_country_paused'
  | 'sms_country_resumed';

const HOUR_MS = 3_600_000;

/**
 * The security events kept in the database: time, user, client address and outcome, never a
 * secret. Events older than `retentionDays` are deleted (by each node, at most once an hour).
 */
export function createAuditTrail({
  store,
  clock,
  retentionDays,
}: {
  store: Store;
  clock: Clock;
  retentionDays: number;
}) {
  let prunedAt = Number.NEGATIVE_INFINITY;

  async function record(
    type: SecurityEventType,
    outcome: string,
    facts: { userId?: string; context?: RequestContext; detail?: Record<string, string> },
  ): Promise<void> {
    const now = clock.now();
    await store.securityEvents.insertSecurityEvent({
      id: randomUUID(),
      occurredAt: now,
      userId: facts.userId,
      clientAddress: facts.context?.clientAddress,
      type,
      outcome,
      detail: facts.detail,
    });
    if (now.getTime() - prunedAt >= HOUR_MS) {
      prunedAt = now.getTime();
      await store.securityEvents.deleteSecurityEventsBefore(new Date(now.getTime() - retentionDays * 24 * HOUR_MS));
    }
  }

  /** The user's latest events, newest first. */
  function listEvents(userId: string, limit = 100): Promise<SecurityEvent[]> {
    return store.securityEvents.listSecurityEvents(userId, limit);
  }

  return { record, listEvents };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
