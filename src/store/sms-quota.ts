import type { ExpressionBuilder } from 'kysely';
import { type CodePurpose, type Database, type Executor, skipLockedOnPostgres } from './database.js';

/**
 * Takes the resend slot for this user and purpose when the last SMS is older than `notAfter`.
 * Returns false inside the cooldown. One conditional upsert, so racing requests cannot both win.
 */
export async function reserveCooldown(
  db: Executor,
  slot: { userId: string; purpose: CodePurpose; reservationId: string },
  now: Date,
  cooldownSeconds: number,
): Promise<boolean> {
  const lastAllowed = new Date(now.getTime() - cooldownSeconds * 1000).toISOString();
  const taken = { sent_at: now.toISOString(), reservation_id: slot.reservationId };
  const row = await db
    .insertInto('sms_cooldown')
    .values({ user_id: slot.userId, purpose: slot.purpose, ...taken })
    .onConflict((conflict) =>
      conflict.columns(['user_id', 'purpose']).doUpdateSet(taken).where('sms_cooldown.sent_at', '<=', lastAllowed),
    )
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** When the last SMS for this user and purpose was sent, or undefined. */
export async function findCooldown(db: Executor, userId: string, purpose: CodePurpose): Promise<Date | undefined> {
  const row = await db
    .selectFrom('sms_cooldown')
    .select('sent_at')
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .executeTakeFirst();
  return row && new Date(row.sent_at);
}

/** Gives back a slot taken by `reserveCooldown` (the SMS was not sent); a newer reservation is kept. */
export async function releaseCooldown(db: Executor, userId: string, purpose: CodePurpose, reservationId: string) {
  await db
    .deleteFrom('sms_cooldown')
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('reservation_id', '=', reservationId)
    .execute();
}

/** Counts one send against `scope` in this window; returns false (counting nothing) at `limit`. */
export async function incrementCounter(
  db: Executor,
  scope: string,
  windowStart: Date,
  limit: number,
): Promise<boolean> {
  const row = await db
    .insertInto('sms_counter')
    .values({ scope, window_start: windowStart.toISOString(), sends: 1 })
    .onConflict((conflict) =>
      conflict
        .columns(['scope', 'window_start'])
        .doUpdateSet((eb) => ({ sends: eb('sms_counter.sends', '+', 1) }))
        .where('sms_counter.sends', '<', limit),
    )
    .returning('sends')
    .executeTakeFirst();
  return row !== undefined;
}

export async function decrementCounter(db: Executor, scope: string, windowStart: Date): Promise<void> {
  await db
    .updateTable('sms_counter')
    .set((eb) => ({ sends: eb('sends', '-', 1) }))
    .where('scope', '=', scope)
    .where('window_start', '=', windowStart.toISOString())
    .where('sends', '>', 0)
    .execute();
}

/** The sends counted against `scope` in the window starting at `windowStart`; 0 when none. */
export async function findCounter(db: Executor, scope: string, windowStart: Date): Promise<number> {
  const row = await db
    .selectFrom('sms_counter')
    .select('sends')
    .where('scope', '=', scope)
    .where('window_start', '=', windowStart.toISOString())
    .executeTakeFirst();
  return row?.sends ?? 0;
}

/** The sends counted against `scope` in the windows from `from` (included) to `to` (excluded). */
export async function sumCounters(db: Executor, scope: string, from: Date, to: Date): Promise<number> {
  const row = await db
    .selectFrom('sms_counter')
    .select((eb) => eb.fn.sum<number | string | null>('sends').as('total'))
    .where('scope', '=', scope)
    .where('window_start', '>=', from.toISOString())
    .where('window_start', '<', to.toISOString())
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}

/** Every counter whose scope starts with `prefix` (`country:`), of the windows from `since` on. */
export async function listCounters(
  db: Executor,
  prefix: string,
  since: Date,
): Promise<{ scope: string; windowStart: Date; sends: number }[]> {
  const rows = await db
    .selectFrom('sms_counter')
    .select(['scope', 'window_start', 'sends'])
    .where('scope', 'like', `${prefix}%`)
    .where('window_start', '>=', since.toISOString())
    .execute();
  return rows.map((row) => ({ scope: row.scope, windowStart: new Date(row.window_start), sends: row.sends }));
}

/**
 * Drops at most `limit` of the counters no cap reads again, oldest first, read from the index on
 * their window; returns how many: every window before `currentWindow`, except those of the scopes
 * starting with `history.scopePrefix` since `history.since` (what the anomaly pause compares with).
 */
export async function deleteStaleCounterBatch(
  db: Executor,
  currentWindow: Date,
  history: { scopePrefix: string; since: Date },
  limit: number,
): Promise<number> {
  const stale = (eb: ExpressionBuilder<Database, 'sms_counter'>) =>
    eb.and([
      eb('window_start', '<', currentWindow.toISOString()),
      eb.or([eb('window_start', '<', history.since.toISOString()), eb('scope', 'not like', `${history.scopePrefix}%`)]),
    ]);
  const oldest = db
    .selectFrom('sms_counter')
    .select(['scope', 'window_start'])
    .where(stale)
    .orderBy('window_start')
    .limit(limit);
  const result = await db
    .deleteFrom('sms_counter')
    .where((eb) =>
      eb(
        eb.refTuple('scope', 'window_start'),
        'in',
        skipLockedOnPostgres(db, oldest).$asTuple('scope', 'window_start'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
