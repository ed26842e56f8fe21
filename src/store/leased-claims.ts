import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { type Database, type Executor, skipLockedOnPostgres } from './database.js';

/** The outboxes whose rows workers claim with a lease: `status`, `due_at`, `attempts`, `lease_id`. */
type LeasedTable = 'webhook_delivery' | 'outbox_message';

/**
 * Claims up to `limit` pending rows of `table` due at `now`, until `leaseUntil` (their `due_at`
 * while held), counting an attempt on each; answers `columns` of each with the claim's lease id.
 * One conditional update settles races between workers: PostgreSQL's SKIP LOCKED lets them pass
 * each other's rows by; SQLite runs one writer at a time. `exceptIds`: rows the caller is still
 * working on, whatever their lease says.
 */
export async function claimDueRows<T extends LeasedTable, C extends keyof Selectable<Database[T]> & string>(
  db: Executor,
  table: T,
  claim: { now: Date; leaseUntil: Date; limit: number; exceptIds?: string[] },
  columns: readonly C[],
): Promise<{ leaseId: string; rows: Pick<Selectable<Database[T]>, C>[] }> {
  // The tables share these columns; Kysely cannot type a query over a union of tables.
  const any = db as unknown as Kysely<any>;
  const from: string = table;
  const now = claim.now.toISOString();
  const leaseId = randomUUID();
  // A read first: idle polls then take no write lock (SQLite has one for the whole file).
  const anyDue = await any
    .selectFrom(from)
    .select('id')
    .where('status', '=', 'pending')
    .where('due_at', '<=', now)
    .limit(1)
    .executeTakeFirst();
  if (!anyDue) return { leaseId, rows: [] };
  const candidates = any
    .selectFrom(from)
    .select('id')
    .where('status', '=', 'pending')
    .where('due_at', '<=', now)
    .$if((claim.exceptIds?.length ?? 0) > 0, (query) => query.where('id', 'not in', claim.exceptIds ?? []))
    .orderBy('due_at')
    .limit(claim.limit);
  const rows = await any
    .updateTable(from)
    .set((eb) => ({ attempts: eb('attempts', '+', 1), lease_id: leaseId, due_at: claim.leaseUntil.toISOString() }))
    .where('id', 'in', skipLockedOnPostgres(db, candidates))
    // Checked again on the row itself: PostgreSQL re-reads a row another claim changed meanwhile.
    .where('status', '=', 'pending')
    .where('due_at', '<=', now)
    .returning(columns as readonly string[])
    .execute();
  return { leaseId, rows: rows as Pick<Selectable<Database[T]>, C>[] };
}

/**
 * Deletes at most `limit` rows of `table` that are done (not pending) and were made before
 * `cutoff`, oldest first, on the index on `created_at`; returns how many. On PostgreSQL rows another
 * transaction holds are passed by, so a clean-up never waits on (or deadlocks with) a worker.
 */
export async function deleteFinishedRowsBefore(
  db: Executor,
  table: LeasedTable,
  cutoff: Date,
  limit: number,
): Promise<number> {
  const any = db as unknown as Kysely<any>;
  const from: string = table;
  const oldest = any
    .selectFrom(from)
    .select('id')
    .where('created_at', '<', cutoff.toISOString())
    .where('status', '!=', 'pending')
    .orderBy('created_at')
    .limit(limit);
  const result = await any.deleteFrom(from).where('id', 'in', skipLockedOnPostgres(db, oldest)).executeTakeFirst();
  return Number(result.numDeletedRows);
}
