import { randomUUID } from 'node:crypto';
import type { OutboxState } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';

/** CONTRACT §16: what an endpoint can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'mfa.enabled',
  'mfa.disabled',
  'mfa.factor_added',
  'mfa.factor_removed',
  'mfa.backup_codes_regenerated',
  'mfa.backup_code_used',
  'mfa.reset_by_operator',
  'login.throttled',
  'mfa.throttled',
  'refresh_token.reused',
  'sms.country_paused',
  'operator.action',
  'password.changed',
  'email.verified',
  'mfa.recovery_started',
  'mfa.recovery_cancelled',
  'mfa.recovery_completed',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * The audit events that are also webhook events, by `type:outcome` (or `type` for any outcome):
 * the one place that decides what is sent, so each change is reported once.
 */
const FROM_AUDIT: Record<string, WebhookEventType> = {
  'mfa_enabled:succeeded': 'mfa.enabled',
  'mfa_disabled:succeeded': 'mfa.disabled',
  'mfa_disabled:reset_by_operator': 'mfa.reset_by_operator',
  // A completed recovery turns MFA off: receivers that track mfa.enabled / mfa.disabled see it go.
  'mfa_disabled:recovered': 'mfa.disabled',
  'factor_added:succeeded': 'mfa.factor_added',
  'factor_removed:succeeded': 'mfa.factor_removed',
  'backup_codes_regenerated:succeeded': 'mfa.backup_codes_regenerated',
  'backup_code_used:succeeded': 'mfa.backup_code_used',
  'login:throttled': 'login.throttled',
  'mfa_throttled:refused': 'mfa.throttled',
  'refresh_token_reuse:login_revoked': 'refresh_token.reused',
  // The person's own change, or an operator's (CONTRACT §20).
  password_changed: 'password.changed',
  'email_verified:succeeded': 'email.verified',
  // Recorded by the SMS fraud defence (CONTRACT §15) when a country's enrolment SMS pause.
  sms_country_paused: 'sms.country_paused',
  // CONTRACT §21: a change made by an operator through the admin API (the console).
  'operator_action:succeeded': 'operator.action',
  // CONTRACT §20: recovery when every factor is lost, cancelled by the user or by a sign-in.
  'recovery_started:succeeded': 'mfa.recovery_started',
  recovery_cancelled: 'mfa.recovery_cancelled',
  'recovery_completed:succeeded': 'mfa.recovery_completed',
};

/** The webhook event an audit event is, or undefined when it is none. */
export function webhookEventFor(type: string, outcome: string): WebhookEventType | undefined {
  return FROM_AUDIT[`${type}:${outcome}`] ?? FROM_AUDIT[type];
}

/** The audit facts a receiver is told; none of them is a secret or a phone number. */
const PASSED_ON = [
  'factor_type',
  'factor_id',
  'country',
  'paused_until',
  'operator_id',
  'action',
  'target_id',
  'ready_at',
] as const;

export interface WebhookEvent {
  type: WebhookEventType;
  occurredAt: Date;
  userId?: string;
  clientAddress?: string;
  detail?: Record<string, string>;
}

/** The body every attempt sends: Standard Webhooks' `{type, timestamp, data}`. */
export function webhookPayload(event: WebhookEvent): string {
  const data: Record<string, string | null> = {
    user_id: event.userId ?? null,
    client_address: event.clientAddress ?? null,
  };
  for (const name of PASSED_ON) {
    const value = event.detail?.[name];
    if (value !== undefined) data[name] = value;
  }
  return JSON.stringify({ type: event.type, timestamp: event.occurredAt.toISOString(), data });
}

/**
 * Puts the event in the outbox once for every endpoint that subscribes to it. Run it on the store
 * of the transaction that makes the change, so that the event exists exactly when the change does.
 */
export async function enqueueWebhookEvent(store: Store, event: WebhookEvent): Promise<void> {
  const endpoints = (await store.webhooks.listEndpoints()).filter((endpoint) => endpoint.events.includes(event.type));
  if (endpoints.length === 0) return;
  const payload = webhookPayload(event);
  await store.webhooks.insertDeliveries(
    endpoints.map((endpoint) => ({
      // The webhook-id: the same on every attempt, so receivers can drop duplicates.
      id: `msg_${randomUUID().replaceAll('-', '')}`,
      endpointId: endpoint.id,
      eventType: event.type,
      payload,
      createdAt: event.occurredAt,
    })),
  );
}

/** What the metrics show of the outbox at `now`. */
export async function readOutboxState(store: Store, now: Date): Promise<OutboxState> {
  const { depth, oldestCreatedAt } = await store.webhooks.describeOutbox();
  return {
    depth,
    oldestAgeSeconds: oldestCreatedAt ? Math.max(0, (now.getTime() - oldestCreatedAt.getTime()) / 1000) : 0,
  };
}
