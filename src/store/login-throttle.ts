import type { Executor } from './database.js';

/** When the scope (a username or an address, hashed) may try again, or undefined when it may now. */
export async function findBlockedUntil(db: Executor, scope: string, now: Date): Promise<Date | undefined> {
  const row = await db
    .selectFrom('login_throttle')
    .select('blocked_until')
    .where('scope', '=', scope)
    .where('blocked_until', '>', now.toISOString())
    .executeTakeFirst();
  return row?.blocked_until ? new Date(row.blocked_until) : undefined;
}

/**
 * Counts one failure in a single upsert (a failure older than `windowStart` starts the count
 * again) and returns the count, from which the caller derives the block.
 */
export async function countFailure(db: Executor, scope: string, now: Date, windowStart: Date): Promise<number> {
  const row = await db
    .insertInto('login_throttle')
    .values({ scope, failures: 1, last_failure_at: now.toISOString(), blocked_until: null })
    .onConflict((conflict) =>
      conflict.column('scope').doUpdateSet((eb) => ({
        failures: eb
          .case()
          .when('login_throttle.last_failure_at', '<', windowStart.toISOString())
          .then(1)
          .else(eb('login_throttle.failures', '+', 1))
          .end(),
        last_failure_at: now.toISOString(),
      })),
    )
    .returning('failures')
    .executeTakeFirstOrThrow();
  return row.failures;
}

export async function setBlockedUntil(db: Executor, scope: string, blockedUntil: Date): Promise<void> {
  await db
    .updateTable('login_throttle')
    .set({ blocked_until: blockedUntil.toISOString() })
    .where('scope', '=', scope)
    .execute();
}

/** Forgets the scope's failures (after a successful login). */
export async function clearFailures(db: Executor, scope: string): Promise<void> {
  await db.deleteFrom('login_throttle').where('scope', '=', scope).execute();
}
