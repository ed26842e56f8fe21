import { PostgresAdapter } from 'kysely';
import type { Executor } from './database.js';

/** How a scope's attempts are limited, with the times already worked out for this attempt. */
export interface AttemptRule {
  /** Attempts allowed before the first wait. */
  free: number;
  /** Attempts after the last one's window are counted from 1 again. */
  windowStart: Date;
  /** The end of the wait the n-th attempt earns (n ≥ free), for n = free, free + 1, …; the last one repeats. */
  blockEnds: Date[];
}

/**
 * Counts one attempt against `scope` unless the scope must wait, in one conditional upsert: of
 * many racing attempts, no more are let through than the count allows. Returns false (counting
 * nothing) while the scope is blocked.
 */
export async function reserveAttempt(db: Executor, scope: string, now: Date, rule: AttemptRule): Promise<boolean> {
  const at = now.toISOString();
  const blockAfter = (attempts: number) =>
    attempts < rule.free ? null : (rule.blockEnds[Math.min(attempts - rule.free, rule.blockEnds.length - 1)] ?? null);
  const windowStart = rule.windowStart.toISOString();
  const row = await db
    .insertInto('login_throttle')
    .values({ scope, failures: 1, last_failure_at: at, blocked_until: blockAfter(1)?.toISOString() ?? null })
    .onConflict((conflict) =>
      conflict
        .column('scope')
        .doUpdateSet((eb) => {
          const stale = eb('login_throttle.last_failure_at', '<', windowStart);
          // The block the new count (failures + 1) earns: none below `free`, then one branch per
          // wait (the list is short), the last wait for every count beyond.
          let block = eb
            .case()
            .when(stale)
            .then(blockAfter(1)?.toISOString() ?? null)
            .when('login_throttle.failures', '<', rule.free - 1)
            .then(null);
          for (let wait = 0; wait < rule.blockEnds.length - 1; wait++) {
            block = block
              .when('login_throttle.failures', '=', rule.free - 1 + wait)
              .then(rule.blockEnds[wait]?.toISOString() ?? null);
          }
          return {
            failures: eb
              .case()
              .when(stale)
              .then(1)
              .else(eb('login_throttle.failures', '+', 1))
              .end(),
            last_failure_at: at,
            blocked_until: block.else(blockAfter(Number.MAX_SAFE_INTEGER)?.toISOString() ?? null).end(),
          };
        })
        .where((eb) =>
          eb.or([
            eb('login_throttle.last_failure_at', '<', windowStart),
            eb('login_throttle.failures', '<', rule.free),
            eb('login_throttle.blocked_until', 'is', null),
            eb('login_throttle.blocked_until', '<=', at),
          ]),
        ),
    )
    .returning('failures')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * For a refused attempt: when the scope may try again, and whether this is the block's first
 * refusal (then it is marked, so that a burst of refused attempts is reported once).
 */
export async function noteRefusal(
  db: Executor,
  scope: string,
  now: Date,
): Promise<{ blockedUntil: Date; isFirstRefusal: boolean } | undefined> {
  const row = await db
    .selectFrom('login_throttle')
    .select('blocked_until')
    .where('scope', '=', scope)
    .where('blocked_until', '>', now.toISOString())
    .executeTakeFirst();
  if (!row?.blocked_until) return undefined;
  const marked = await db
    .updateTable('login_throttle')
    .set({ noted_block_until: row.blocked_until })
    .where('scope', '=', scope)
    .where('blocked_until', '=', row.blocked_until)
    .where((eb) =>
      eb.or([eb('noted_block_until', 'is', null), eb('noted_block_until', '<>', row.blocked_until as string)]),
    )
    .returning('scope')
    .executeTakeFirst();
  return { blockedUntil: new Date(row.blocked_until), isFirstRefusal: marked !== undefined };
}

/** Gives back one counted attempt that turned out right. */
export async function releaseAttempt(db: Executor, scope: string): Promise<void> {
  await db
    .updateTable('login_throttle')
    .set((eb) => ({ failures: eb('failures', '-', 1) }))
    .where('scope', '=', scope)
    .where('failures', '>', 0)
    .execute();
}

/** Forgets the scope's attempts (after a success that proves the owner is back). */
export async function clearAttempts(db: Executor, scope: string): Promise<void> {
  await db.deleteFrom('login_throttle').where('scope', '=', scope).execute();
}

/** Forgets every scope whose last attempt came before `cutoff`. */
export async function deleteAttemptsBefore(db: Executor, cutoff: Date): Promise<void> {
  const before = cutoff.toISOString();
  let stale = db.selectFrom('login_throttle').select('scope').where('last_failure_at', '<', before);
  // PostgreSQL: a row a reservation holds is skipped, not waited for. The delete would lock rows
  // in its scan's order and a reservation locks its scopes in its own: waiting could close a cycle.
  if (db.getExecutor().adapter instanceof PostgresAdapter) stale = stale.forUpdate().skipLocked();
  await db.deleteFrom('login_throttle').where('scope', 'in', stale).where('last_failure_at', '<', before).execute();
}
