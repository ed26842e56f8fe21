import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import { unseal } from '../crypto/sealing.js';
import { ServiceError } from '../errors.js';
import { MailTimeout } from '../mail/mail-sender.js';
import type { MessageOutcome, ServiceMetrics } from '../metrics/metrics.js';
import type { ClaimedMessage } from '../store/outbox-messages.js';
import type { Store } from '../store/store.js';
import { createClaimLoop } from './claim-loop.js';
import { MESSAGE_LEASE_SECONDS, messageSealingContext, type OutboxMessages } from './message-outbox.js';
import { nextAttemptAt } from './retry.js';

/** How each channel sends: throws the sender's ServiceError (mail-sender.ts, sms-sender.ts). */
export type Channels = {
  [C in keyof OutboxMessages]: (message: OutboxMessages[C], log: BaseLogger, messageId: string) => Promise<void>;
};

/** The sender's refusals of the address itself: final, another try would be refused again. */
const REFUSALS = new Set(['email_address_rejected', 'phone_number_rejected']);
const MAX_IN_FLIGHT = 8;

export interface MessageWorkerDeps {
  store: Store;
  clock: Clock;
  sealingKey: Buffer;
  channels: Channels;
  metrics: ServiceMetrics;
  log: BaseLogger;
  pollIntervalMs?: number;
}

/** How an attempt ended; `error` is the sender's, for a writer who tells the person at once. */
export interface AttemptResult {
  outcome: MessageOutcome;
  error?: unknown;
}

/**
 * Sends the outbox's due mail and SMS from every node, one attempt per claim: retried on failure
 * or silence before anything was sent (5 s doubling to an hour, jittered, for 24 hours, as
 * webhooks are), given up at once when the server refuses the address. A mail server that went
 * silent after the message was on its way may have kept it: that message is not sent again
 * (`unconfirmed`), as CONTRACT §20 wants no event mailed twice. A message is blanked once done.
 */
export function createMessageWorker(deps: MessageWorkerDeps) {
  const { store, clock, sealingKey, channels, metrics, log } = deps;
  const loop = createClaimLoop({
    queue: 'message outbox',
    claim(limit, exceptIds) {
      const now = clock.now();
      const leaseUntil = new Date(now.getTime() + MESSAGE_LEASE_SECONDS * 1000);
      return store.outbox.claimDueMessages({ now, leaseUntil, limit, exceptIds });
    },
    run: send,
    maxInFlight: MAX_IN_FLIGHT,
    pollIntervalMs: deps.pollIntervalMs ?? 500,
    log,
  });

  /**
   * Sends a held message once and records the outcome; never throws. The writer tells the person
   * how it went, who may ask again: a failure is not retried.
   */
  function attempt(message: ClaimedMessage): Promise<AttemptResult> {
    return loop.track(message.id, send(message, true));
  }

  async function send(message: ClaimedMessage, isOnce = false): Promise<AttemptResult> {
    let error: unknown;
    try {
      if (message.expiresAt && message.expiresAt <= clock.now()) throw new MessageExpired();
      const opened = JSON.parse(unseal(message.sealedMessage, sealingKey, messageSealingContext(message.id)));
      const sendOn = channels[message.channel] as (message: unknown, log: BaseLogger, id: string) => Promise<void>;
      await sendOn(opened, log, message.id);
    } catch (caught) {
      error = caught;
    }
    const now = clock.now();
    const code = error instanceof ServiceError ? error.code : undefined;
    const isRefused = REFUSALS.has(code ?? '');
    // The server went silent once it may have kept the message: sent again, it could arrive twice.
    const isUnconfirmed = error instanceof MailTimeout && error.maybeSent;
    const isRetried = error && !isOnce && !isRefused && !isUnconfirmed && !(error instanceof MessageExpired);
    const retryAt = isRetried
      ? nextAttemptAt(message.createdAt, message.attempt, now, Math.random, message.expiresAt)
      : undefined;
    const outcome: MessageOutcome = !error
      ? 'sent'
      : retryAt
        ? 'failed'
        : isRefused
          ? 'refused'
          : isUnconfirmed
            ? 'unconfirmed'
            : 'gave_up';
    const facts = { message_id: message.id, kind: message.kind, attempt: message.attempt, error: code, outcome };
    try {
      const isRecorded = await store.outbox.finishMessageAttempt({
        id: message.id,
        leaseId: message.leaseId,
        status: outcome === 'sent' ? 'sent' : outcome === 'failed' ? 'pending' : 'failed',
        dueAt: retryAt ?? now,
        error: error ? (code ?? (error instanceof Error ? error.name : 'unknown')) : undefined,
      });
      if (!isRecorded) log.warn(facts, 'message attempt outlived its claim; another node has it');
    } catch (recordError) {
      log.error({ err: recordError, ...facts }, 'message attempt not recorded; its claim lapses and it is tried again');
    }
    metrics.messageAttempted(message.channel, message.kind, outcome);
    if (outcome === 'sent') log.info(facts, 'message sent');
    else log.warn({ ...facts, next_attempt_at: retryAt?.toISOString() }, `message ${outcome}`);
    return { outcome, error };
  }

  return {
    attempt,
    start: loop.start,
    /** Stops polling and lets attempts under way end (each is bounded by its sender's timeout). */
    async stop() {
      await loop.halt();
      await Promise.allSettled(loop.underWay());
    },
  };
}

export type MessageWorker = ReturnType<typeof createMessageWorker>;

/** A message that is of no more use (an email code's, once the code expired): given up unsent. */
class MessageExpired extends Error {
  override name = 'expired';
}
