import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import { unseal } from '../crypto/sealing.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import { createClaimLoop } from '../outbox/claim-loop.js';
import { nextAttemptAt } from '../outbox/retry.js';
import type { Store } from '../store/store.js';
import type { ClaimedDelivery } from '../store/webhooks.js';
import { inSpan, traceHeaders } from '../tracing.js';
import { addressRefusal, DestinationRefused, guardedLookup, hostOf } from './destination-guard.js';
import { sealingContext } from './endpoints.js';
import { signWebhook } from './signature.js';

/** CONTRACT §16: an attempt that has no answer within 10 s has failed. */
const SEND_TIMEOUT_MS = 10_000;
/** A claim outlives any attempt, so a live worker keeps it; a dead worker's lapses and is taken over. */
const LEASE_SECONDS = 20;
const MAX_IN_FLIGHT = 16;
/** On shutdown, how long attempts in flight may take before they are cut short. */
const STOP_GRACE_MS = 3000;

export interface DeliveryWorkerDeps {
  store: Store;
  clock: Clock;
  sealingKey: Buffer;
  allowPrivate: boolean;
  metrics: ServiceMetrics;
  log: BaseLogger;
  pollIntervalMs?: number;
}

/**
 * Sends the outbox's due deliveries, signed per Standard Webhooks, from every node. Due times
 * follow the clock; the polling uses real timers (unref'd). `stop` lets attempts in flight finish
 * briefly, then cuts them short and makes them due again at once: no claimed delivery is lost.
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps) {
  const { store, clock, sealingKey, allowPrivate, metrics, log } = deps;
  const stopping = new AbortController();
  const loop = createClaimLoop({
    queue: 'webhook outbox',
    claim(limit, exceptIds) {
      const now = clock.now();
      const leaseUntil = new Date(now.getTime() + LEASE_SECONDS * 1000);
      return store.webhooks.claimDueDeliveries({ now, leaseUntil, limit, exceptIds });
    },
    run: deliver,
    maxInFlight: MAX_IN_FLIGHT,
    pollIntervalMs: deps.pollIntervalMs ?? 500,
    log,
  });

  async function deliver(delivery: ClaimedDelivery): Promise<void> {
    let responseStatus: number | undefined;
    let failure: string | undefined;
    try {
      responseStatus = await send(delivery);
    } catch (error) {
      failure = describeFailure(error);
    }
    const now = clock.now();
    const succeeded = responseStatus !== undefined && responseStatus >= 200 && responseStatus < 300;
    // Cut short by shutdown: not the receiver's fault, so due again at once, on another node or after the restart.
    const retryAt = succeeded
      ? undefined
      : stopping.signal.aborted
        ? now
        : nextAttemptAt(delivery.createdAt, delivery.attempt, now);
    const next = succeeded
      ? { status: 'succeeded' as const, dueAt: now }
      : retryAt
        ? { status: 'pending' as const, dueAt: retryAt }
        : { status: 'failed' as const, dueAt: now };
    const facts = {
      webhook_id: delivery.id,
      endpoint_id: delivery.endpointId,
      event_type: delivery.eventType,
      attempt: delivery.attempt,
      response_status: responseStatus,
      failure,
    };
    try {
      // One transaction: the delivery log never shows the attempt ended and the delivery still held.
      await store.transaction((tx) =>
        tx.webhooks.finishAttempt({ delivery, status: succeeded ? 'succeeded' : 'failed', responseStatus, next }),
      );
    } catch (error) {
      log.error({ err: error, ...facts }, 'webhook attempt not recorded; its claim lapses and it is tried again');
      return;
    }
    const outcome = succeeded ? 'succeeded' : next.status === 'failed' ? 'gave_up' : 'failed';
    metrics.webhookAttempted(outcome);
    if (outcome === 'gave_up') log.warn(facts, 'webhook delivery given up after 24 hours');
    else log.info({ ...facts, next_attempt_at: retryAt?.toISOString() }, `webhook attempt ${outcome}`);
  }

  /** POSTs the delivery; resolves with the answer's status, rejects when there is none. */
  function send(delivery: ClaimedDelivery): Promise<number> {
    const url = new URL(delivery.url);
    // Checked at creation; checked again here, as the rules or the row may have changed since.
    if (!allowPrivate) {
      const host = hostOf(url);
      const kind = isIP(host) ? addressRefusal(host) : undefined;
      if (url.protocol !== 'https:' || kind)
        throw new DestinationRefused(`the URL is not https or ${kind ?? 'allowed'}`);
    }
    const secret = unseal(delivery.sealedSecret, sealingKey, sealingContext(delivery.endpointId));
    const timestamp = Math.floor(clock.now().getTime() / 1000);
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(delivery.payload)),
      'webhook-id': delivery.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, delivery.id, timestamp, delivery.payload),
    };
    const signal = AbortSignal.any([stopping.signal, AbortSignal.timeout(SEND_TIMEOUT_MS)]);
    // A span per attempt (CONTRACT §22): the receiver's host and its answer, never the URL's path or query.
    return inSpan('POST webhook', { 'server.address': url.hostname, 'webhook.event_id': delivery.id }, async (span) => {
      const status = await post(url, { ...headers, ...traceHeaders() }, delivery.payload, signal);
      span.setAttribute('http.response.status_code', status);
      return status;
    });
  }

  function post(url: URL, headers: Record<string, string>, payload: string, signal: AbortSignal): Promise<number> {
    return new Promise((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(
        url,
        // No connection pool: each attempt resolves (and so checks) the host anew.
        { method: 'POST', headers, signal, agent: false, lookup: allowPrivate ? undefined : guardedLookup },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }

  function describeFailure(error: unknown): string {
    if (stopping.signal.aborted) return 'cut short by shutdown';
    if (error instanceof Error && error.name === 'AbortError') return `no answer within ${SEND_TIMEOUT_MS / 1000} s`;
    if (error instanceof DestinationRefused) return `refused: ${error.message}`;
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? code : String(error);
  }

  return {
    start: loop.start,
    async stop() {
      await loop.halt();
      const grace = new AbortController();
      await Promise.race([
        Promise.allSettled(loop.underWay()),
        sleep(STOP_GRACE_MS, undefined, { signal: grace.signal }).catch(() => {}),
      ]);
      grace.abort();
      stopping.abort();
      await Promise.allSettled(loop.underWay());
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
