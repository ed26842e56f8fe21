import type { Expression, ExpressionBuilder } from 'kysely';
import type { Database, Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/** How a scope's attempts are limited, with the times already worked out for this attempt. */
export interface AttemptRule {
  /** Attempts allowed before the first wait. */
  free: number;
  /** Attempts after the last one's window are counted from 1 again. */
  windowStart: Date;
  /** The end of the wait the n-th attempt earns (n ≥ free), for n = free, free + 1, …; the last one repeats. */
  blockEnds: Date[];
}

/** One scope an attempt is counted in, and its rule. */
export interface ScopedRule {
  scope: string;
  rule: AttemptRule;
}

/**
 * Counts one attempt in each scope that may try now, in one conditional upsert: of many racing
 * attempts, no more are let through than the count allows. The attempt counts as a failure until
 * it is settled (a right one gives it back), and as in flight: attempts in flight since before
 * `inFlightSince` are taken for abandoned (their node stopped), so the count starts again at 1.
 * Returns the scopes counted; a scope that must wait is left as it was (run it in a transaction
 * to count in every scope or in none).
 * Rows are locked in scope order, as `settleRightAttempt` locks them, so that the two never
 * wait for each other in a cycle. Each scope is given once (an upsert may touch a row only once).
 */
export async function reserveAttempts(
  db: Executor,
  attempts: ScopedRule[],
  now: Date,
  inFlightSince: Date,
): Promise<string[]> {
  if (attempts.length === 0) return [];
  const at = now.toISOString();
  const sorted = [...attempts].sort((a, b) => (a.scope < b.scope ? -1 : 1));
  const rows = await db
    .insertInto('login_throttle')
    .values(
      sorted.map(({ scope, rule }) => ({
        scope,
        failures: 1,
        last_failure_at: at,
        blocked_until: blockAfter(rule, 1),
        in_flight: 1,
        in_flight_at: at,
      })),
    )
    .onConflict((conflict) =>
      conflict
        .column('scope')
        .doUpdateSet((eb) => {
          const stale = (rule: AttemptRule) =>
            eb('login_throttle.last_failure_at', '<', rule.windowStart.toISOString());
          /** `pick` of the row's own scope: one branch per scope, the last as the default. */
          const perScope = <T>(pick: (rule: AttemptRule) => Expression<T>): Expression<T> => {
            const [first, ...others] = sorted as [ScopedRule, ...ScopedRule[]];
            const last = others.pop();
            if (!last) return pick(first.rule);
            let branches = eb.case().when('login_throttle.scope', '=', first.scope).then(pick(first.rule));
            for (const { scope, rule } of others) {
              branches = branches.when('login_throttle.scope', '=', scope).then(pick(rule));
            }
            return branches.else(pick(last.rule)).end();
          };
          return {
            in_flight: eb
              .case()
              .when(isInFlight(eb, inFlightSince))
              .then(eb('login_throttle.in_flight', '+', 1))
              .else(1)
              .end(),
            in_flight_at: at,
            failures: perScope((rule) =>
              eb
                .case()
                .when(stale(rule))
                .then(1)
                .else(eb('login_throttle.failures', '+', 1))
                .end(),
            ),
            last_failure_at: at,
            // The block the new count (failures + 1) earns: none below `free`, then one branch per
            // wait (the list is short), the last wait for every count beyond.
            blocked_until: perScope((rule) => {
              let block = eb
                .case()
                .when(stale(rule))
                .then(blockAfter(rule, 1))
                .when('login_throttle.failures', '<', rule.free - 1)
                .then(null);
              for (let wait = 0; wait < rule.blockEnds.length - 1; wait++) {
                block = block
                  .when('login_throttle.failures', '=', rule.free - 1 + wait)
                  .then(rule.blockEnds[wait]?.toISOString() ?? null);
              }
              return block.else(blockAfter(rule, Number.MAX_SAFE_INTEGER)).end();
            }),
          };
        })
        .where((eb) =>
          eb.or(
            sorted.map(({ scope, rule }) =>
              eb.and([
                eb('login_throttle.scope', '=', scope),
                eb.or([
                  eb('login_throttle.last_failure_at', '<', rule.windowStart.toISOString()),
                  eb('login_throttle.failures', '<', rule.free),
                  eb('login_throttle.blocked_until', 'is', null),
                  eb('login_throttle.blocked_until', '<=', at),
                ]),
              ]),
            ),
          ),
        ),
    )
    .returning('scope')
    .execute();
  return rows.map((row) => row.scope);
}

/** The end of the block that the `attempts`-th attempt in a window earns, or null for none. */
function blockAfter(rule: AttemptRule, attempts: number): string | null {
  if (attempts < rule.free) return null;
  return rule.blockEnds[Math.min(attempts - rule.free, rule.blockEnds.length - 1)]?.toISOString() ?? null;
}

/**
 * For a refused attempt: when the scope may try again, and whether this is the block's first
 * refusal (then it is marked, so that a burst of refused attempts is reported once). `isBusy`
 * instead when attempts are still in flight: the refusal may be theirs, not failures', so the
 * caller waits for them to be settled and asks again.
 */
export async function noteRefusal(
  db: Executor,
  scope: string,
  now: Date,
  inFlightSince: Date,
): Promise<{ isBusy: true } | { isBusy: false; blockedUntil: Date; isFirstRefusal: boolean } | undefined> {
  const row = await db
    .selectFrom('login_throttle')
    .select(['blocked_until', 'in_flight', 'in_flight_at'])
    .where('scope', '=', scope)
    .executeTakeFirst();
  if (row && row.in_flight > 0 && row.in_flight_at !== null && row.in_flight_at >= inFlightSince.toISOString()) {
    return { isBusy: true };
  }
  if (!row?.blocked_until || row.blocked_until <= now.toISOString()) return undefined;
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
  return { isBusy: false, blockedUntil: new Date(row.blocked_until), isFirstRefusal: marked !== undefined };
}

/** A scope an attempt was counted in, with the attempts it allows before a wait. */
export interface CountedScope {
  scope: string;
  free: number;
}

/**
 * A counted attempt turned out right, settled in one statement; it is no longer in flight.
 * `forget`'s failures are forgotten (its count keeps only the other attempts still in flight), and
 * `giveBack`, if any, gets this attempt back. A scope whose count falls below what it allows is
 * no longer blocked: a block earned by attempts in flight, not by failures, ends with them. Rows
 * are locked in scope order, as `reserveAttempts` locks them.
 */
export async function settleRightAttempt(
  db: Executor,
  now: Date,
  inFlightSince: Date,
  forget: CountedScope,
  giveBack?: CountedScope,
): Promise<void> {
  const scopes = (giveBack === undefined ? [forget] : [forget, giveBack]).sort((a, b) => (a.scope < b.scope ? -1 : 1));
  await db
    .insertInto('login_throttle')
    .values(
      scopes.map(({ scope }) => ({
        scope,
        failures: 0,
        last_failure_at: now.toISOString(),
        blocked_until: null,
        in_flight: 0,
        in_flight_at: null,
      })),
    )
    .onConflict((conflict) =>
      conflict.column('scope').doUpdateSet((eb) => {
        const othersInFlight = eb
          .case()
          .when(eb.and([isInFlight(eb, inFlightSince), eb('login_throttle.in_flight', '>', 1)]))
          .then(eb('login_throttle.in_flight', '-', 1))
          .else(0)
          .end();
        const failuresLessOne = eb
          .case()
          .when('login_throttle.failures', '>', 0)
          .then(eb('login_throttle.failures', '-', 1))
          .else(0)
          .end();
        const failures = eb
          .case()
          .when('login_throttle.scope', '=', forget.scope)
          .then(othersInFlight)
          .else(failuresLessOne)
          .end();
        const freeOf = eb
          .case()
          .when('login_throttle.scope', '=', forget.scope)
          .then(forget.free)
          .else(giveBack?.free ?? forget.free)
          .end();
        return {
          failures,
          in_flight: othersInFlight,
          blocked_until: eb
            .case()
            .when(failures, '<', freeOf)
            .then(null)
            .else(eb.ref('login_throttle.blocked_until'))
            .end(),
        };
      }),
    )
    .execute();
}

/** Counted attempts turned out wrong: they stay counted as failures, and are no longer in flight. */
export async function settleWrongAttempt(db: Executor, scopes: string[]): Promise<void> {
  // One statement per row, in scope order, as `reserveAttempts` locks them. One UPDATE … IN would
  // lock them in its scan's order, which on PostgreSQL can be the heap's: two nodes settling and
  // reserving the same scopes then deadlocked (seen with 50 logins racing over two nodes).
  for (const scope of [...scopes].sort((a, b) => (a < b ? -1 : 1))) {
    await db
      .updateTable('login_throttle')
      .set((eb) => ({
        in_flight: eb
          .case()
          .when('in_flight', '>', 0)
          .then(eb('in_flight', '-', 1))
          .else(0)
          .end(),
      }))
      .where('scope', '=', scope)
      .execute();
  }
}

/** The row's attempts in flight are recent enough to be waited for. */
function isInFlight(eb: ExpressionBuilder<Database, 'login_throttle'>, since: Date) {
  return eb('login_throttle.in_flight_at', '>=', since.toISOString());
}

/**
 * An operator lifts the scopes' blocks (CONTRACT §21): their failures are forgotten, the attempts
 * still in flight stay counted until they are settled.
 */
export async function clearFailures(db: Executor, scopes: string[]): Promise<void> {
  await db
    .updateTable('login_throttle')
    .set((eb) => ({ failures: eb.ref('in_flight'), blocked_until: null, noted_block_until: null }))
    .where('scope', 'in', scopes)
    .execute();
}

/** The latest end of a block among the scopes that is still ahead of `now`, or undefined. */
export async function findBlockedUntil(db: Executor, scopes: string[], now: Date): Promise<Date | undefined> {
  const row = await db
    .selectFrom('login_throttle')
    .select((eb) => eb.fn.max('blocked_until').as('until'))
    .where('scope', 'in', scopes)
    .where('blocked_until', '>', now.toISOString())
    .executeTakeFirst();
  return row?.until ? new Date(row.until) : undefined;
}

/**
 * Forgets at most `limit` scopes whose last attempt came before `cutoff`, oldest first; returns how
 * many. PostgreSQL: a row a reservation holds is skipped, not waited for (the delete would lock rows
 * in its order and a reservation locks its scopes in its own: waiting could close a cycle).
 */
export async function deleteAttemptsBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'login_throttle', cutoff, limit);
}
