import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { seal } from '../crypto/sealing.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { DeliveryAttempt, WebhookEndpoint } from '../store/webhooks.js';
import { checkDestination } from './destination-guard.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './outbox.js';
import { createWebhookSecret } from './signature.js';

/** The purpose the webhook secrets' sealing key is derived for (crypto/secrets.ts deriveKey). */
export const WEBHOOK_SEALING_PURPOSE = 'webhook-secret-sealing';

/** What binds a sealed secret to its endpoint: it cannot be moved into another's row. */
export function sealingContext(endpointId: string): string {
  return `webhook:${endpointId}`;
}

export interface WebhookEndpointDeps {
  store: Store;
  clock: Clock;
  sealingKey: Buffer;
  /** WEBHOOK_ALLOW_PRIVATE: http and private addresses allowed. */
  allowPrivate: boolean;
}

/** The admin's webhook endpoints: where security events go. */
export function createWebhookEndpoints({ store, clock, sealingKey, allowPrivate }: WebhookEndpointDeps) {
  /**
   * A new endpoint for `events` (default: all of them) and its secret, returned this once and
   * stored sealed. Throws 400 `webhook_url_refused` for a URL a webhook may not go to.
   */
  async function createEndpoint(
    url: string,
    events: readonly WebhookEventType[] = WEBHOOK_EVENT_TYPES,
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const checked = await checkDestination(url, allowPrivate);
    const id = randomUUID();
    const secret = createWebhookSecret();
    const endpoint: WebhookEndpoint = {
      id,
      url: checked.href,
      events: [...new Set(events)],
      sealedSecret: seal(secret, sealingKey, sealingContext(id)),
      createdAt: clock.now(),
    };
    await store.webhooks.insertEndpoint(endpoint);
    return { endpoint, secret };
  }

  /** Deletes the endpoint with its pending deliveries and their log; throws 404 `not_found`. */
  async function deleteEndpoint(id: string): Promise<void> {
    if (!(await store.webhooks.deleteEndpoint(id))) throw notFound();
  }

  /** The endpoint's latest delivery attempts, newest first; throws 404 `not_found`. */
  async function listDeliveries(id: string, limit = 100): Promise<DeliveryAttempt[]> {
    if (!(await store.webhooks.hasEndpoint(id))) throw notFound();
    return store.webhooks.listDeliveryAttempts(id, limit);
  }

  /**
   * Sends a done delivery of the endpoint again, as it was (same webhook-id and body), by the
   * delivery worker within moments. Throws 404 `not_found` for an unknown endpoint or event,
   * 409 `delivery_pending` while the delivery still waits for an attempt or is being attempted.
   */
  async function redeliver(id: string, eventId: string): Promise<void> {
    if (!(await store.webhooks.hasEndpoint(id))) throw notFound();
    if (await store.webhooks.redeliver(id, eventId, clock.now())) return;
    if (!(await store.webhooks.hasDelivery(id, eventId)))
      throw new ServiceError('not_found', 'this endpoint has no delivery with this event id');
    throw new ServiceError(
      'delivery_pending',
      'this delivery is still pending: the delivery worker attempts it; redeliver it once it succeeded or failed',
    );
  }

  return {
    createEndpoint,
    listEndpoints: () => store.webhooks.listEndpoints(),
    deleteEndpoint,
    listDeliveries,
    redeliver,
  };
}

export type WebhookEndpoints = ReturnType<typeof createWebhookEndpoints>;

function notFound() {
  return new ServiceError('not_found', 'no webhook endpoint has this id; GET /admin/webhooks lists them');
}
