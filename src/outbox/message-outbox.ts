import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { seal } from '../crypto/sealing.js';
import type { MailMessage } from '../mail/mail-sender.js';
import type { OutboxChannel } from '../store/database.js';
import type { ClaimedMessage } from '../store/outbox-messages.js';
import type { Store } from '../store/store.js';

/** What an SMS of the outbox is: a number (digits, as factors keep it) and a text. */
export interface SmsMessage {
  phoneNumber: string;
  body: string;
}

/** Each channel's message, as sealed in the outbox. */
export interface OutboxMessages {
  email: MailMessage;
  sms: SmsMessage;
}

/** Who the message is about (the audit's user) and what it is, for the outbox's own records. */
export interface MessageLabel {
  /** `email_code`, `notice.factor_added`, `recovery_sms` …: a label of the metrics, never a value. */
  kind: string;
  userId?: string;
  /** When the message is of no more use: not sent, nor retried, from then on. */
  expiresAt?: Date;
}

/**
 * How long a claim on a message holds: longer than any attempt, so that no attempt is ever made
 * while another is under way (a send is at most smtp-sender.ts's `maxSendMs`, 480 s at the
 * largest SMTP_TIMEOUT_MS, 120 s). A node that dies holding a message delays it this long.
 */
export const MESSAGE_LEASE_SECONDS = 540;

/** What the sealing key of messages is derived for, from the service's secret. */
export const MESSAGE_SEALING_PURPOSE = 'outbox-message-sealing';

/** The sealing of a message binds it to its row, so that no sealed text can be moved to another. */
export const messageSealingContext = (id: string) => `outbox-message:${id}`;

/**
 * CONTRACT §16/§20: every mail and SMS the service sends on its own goes through here. Call it on
 * the store of the transaction that makes the change the message tells of: the message then
 * exists exactly when the change does, and the worker (message-worker.ts) sends it, retried, once.
 */
export function createMessageOutbox({ clock, sealingKey }: { clock: Clock; sealingKey: Buffer }) {
  async function queue<C extends OutboxChannel>(
    store: Store,
    channel: C,
    message: OutboxMessages[C],
    label: MessageLabel,
    isHeld: boolean,
  ): Promise<ClaimedMessage> {
    const id = randomUUID();
    const now = clock.now();
    const sealedMessage = seal(JSON.stringify(message), sealingKey, messageSealingContext(id));
    const leaseId = randomUUID();
    const held = isHeld ? { leaseId, leaseUntil: new Date(now.getTime() + MESSAGE_LEASE_SECONDS * 1000) } : undefined;
    await store.outbox.insertOutboxMessage({ id, channel, sealedMessage, createdAt: now, held, ...label });
    return {
      id,
      channel,
      kind: label.kind,
      sealedMessage,
      createdAt: now,
      expiresAt: label.expiresAt,
      attempt: 1,
      leaseId,
    };
  }

  return {
    /** Puts a mail in the outbox: the worker sends it within a second or so. */
    async queueMail(store: Store, mail: MailMessage, label: MessageLabel): Promise<void> {
      await queue(store, 'email', mail, label, false);
    },
    /**
     * Puts a mail in the outbox held for its writer, who sends it with the worker's `attempt` once
     * the transaction is committed, to tell the person at once whether the server took it. Should
     * the writer die first, its hold lapses and a worker sends it (unless it has expired).
     */
    holdMail(store: Store, mail: MailMessage, label: MessageLabel): Promise<ClaimedMessage> {
      return queue(store, 'email', mail, label, true);
    },
    /** Puts an SMS in the outbox. */
    async queueSms(store: Store, sms: SmsMessage, label: MessageLabel): Promise<void> {
      await queue(store, 'sms', sms, label, false);
    },
  };
}

export type MessageOutbox = ReturnType<typeof createMessageOutbox>;
