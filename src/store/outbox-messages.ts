import type { Executor, OutboxChannel, OutboxMessageStatus } from './database.js';
import { claimDueRows, deleteFinishedRowsBefore } from './leased-claims.js';

/** A message to put in the outbox; `held` claims it at once for its writer, who sends it itself. */
export interface NewOutboxMessage {
  id: string;
  channel: OutboxChannel;
  kind: string;
  userId?: string;
  sealedMessage: string;
  createdAt: Date;
  expiresAt?: Date;
  held?: { leaseId: string; leaseUntil: Date };
}

/** A message a worker (or its writer) holds: send it, then finish it with the same `leaseId`. */
export interface ClaimedMessage {
  id: string;
  channel: OutboxChannel;
  kind: string;
  sealedMessage: string;
  createdAt: Date;
  /** Given up at this time, sent or not; retried for 24 hours when undefined. */
  expiresAt?: Date;
  /** 1 for the first attempt. */
  attempt: number;
  leaseId: string;
}

/** Puts a message in the outbox; run it in the transaction of the change that causes it. */
export async function insertOutboxMessage(db: Executor, message: NewOutboxMessage): Promise<void> {
  await db
    .insertInto('outbox_message')
    .values({
      id: message.id,
      channel: message.channel,
      kind: message.kind,
      user_id: message.userId ?? null,
      sealed_message: message.sealedMessage,
      status: 'pending',
      attempts: message.held ? 1 : 0,
      due_at: (message.held?.leaseUntil ?? message.createdAt).toISOString(),
      lease_id: message.held?.leaseId ?? null,
      last_error: null,
      created_at: message.createdAt.toISOString(),
      finished_at: null,
      expires_at: message.expiresAt?.toISOString() ?? null,
    })
    .execute();
}

/** Claims up to `limit` due messages (leased-claims.ts); a claim that lapsed (its worker died) is due again. */
export async function claimDueMessages(
  db: Executor,
  claim: { now: Date; leaseUntil: Date; limit: number; exceptIds?: string[] },
): Promise<ClaimedMessage[]> {
  const { leaseId, rows } = await claimDueRows(db, 'outbox_message', claim, [
    'id',
    'channel',
    'kind',
    'sealed_message',
    'attempts',
    'created_at',
    'expires_at',
  ]);
  return rows.map((row) => ({
    id: row.id,
    channel: row.channel,
    kind: row.kind,
    sealedMessage: row.sealed_message,
    createdAt: new Date(row.created_at),
    expiresAt: row.expires_at ? new Date(row.expires_at) : undefined,
    attempt: row.attempts,
    leaseId,
  }));
}

/**
 * Records how an attempt ended: `sent` or `failed` for good (the message is blanked), or `pending`
 * again from `dueAt`. Only the holder of the lease may: a worker whose claim lapsed and was taken
 * over changes nothing. Returns false then.
 */
export async function finishMessageAttempt(
  db: Executor,
  finished: { id: string; leaseId: string; status: OutboxMessageStatus; dueAt: Date; error?: string },
): Promise<boolean> {
  const isDone = finished.status !== 'pending';
  const row = await db
    .updateTable('outbox_message')
    .set({
      status: finished.status,
      due_at: finished.dueAt.toISOString(),
      lease_id: null,
      last_error: finished.error ?? null,
      ...(isDone && { sealed_message: '', finished_at: finished.dueAt.toISOString() }),
    })
    .where('id', '=', finished.id)
    .where('lease_id', '=', finished.leaseId)
    .where('status', '=', 'pending')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Deletes the messages done (sent or given up) before `cutoff`. */
export function deleteFinishedMessagesBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteFinishedRowsBefore(db, 'outbox_message', cutoff, limit);
}
