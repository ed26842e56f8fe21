import { type Executor, skipLockedOnPostgres } from './database.js';

export interface SecurityEvent {
  id: string;
  occurredAt: Date;
  userId?: string;
  clientAddress?: string;
  type: string;
  outcome: string;
  /** Non-secret facts, e.g. the client id or the reason; never a code, token or password. */
  detail?: Record<string, string>;
}

export async function insertSecurityEvent(db: Executor, event: SecurityEvent): Promise<void> {
  await db
    .insertInto('security_event')
    .values({
      id: event.id,
      occurred_at: event.occurredAt.toISOString(),
      user_id: event.userId ?? null,
      client_address: event.clientAddress ?? null,
      type: event.type,
      outcome: event.outcome,
      detail: event.detail ? JSON.stringify(event.detail) : null,
    })
    .execute();
}

/** The user's events, newest first, at most `limit`. */
export async function listSecurityEvents(db: Executor, userId: string, limit: number): Promise<SecurityEvent[]> {
  const rows = await db
    .selectFrom('security_event')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    occurredAt: new Date(row.occurred_at),
    userId: row.user_id ?? undefined,
    clientAddress: row.client_address ?? undefined,
    type: row.type,
    outcome: row.outcome,
    detail: row.detail ? (JSON.parse(row.detail) as Record<string, string>) : undefined,
  }));
}

/** Deletes at most `limit` of the events that happened before `cutoff`, oldest first; returns how many. */
export async function deleteSecurityEventsBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  const oldest = db
    .selectFrom('security_event')
    .select('id')
    .where('occurred_at', '<', cutoff.toISOString())
    .orderBy('occurred_at')
    .limit(limit);
  const result = await db
    .deleteFrom('security_event')
    .where('id', 'in', skipLockedOnPostgres(db, oldest))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
