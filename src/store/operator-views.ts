import { sql } from 'kysely';
import type { Executor } from './database.js';

// What the operators' console reads (CONTRACT §21), aggregated in SQL: a page of users at a time,
// and counts per hour, never rows loaded to be counted here.

export interface UserSummary {
  id: string;
  username: string;
  mfaEnabled: boolean;
  isOperator: boolean;
  createdAt: Date;
}

/**
 * Users whose username starts with `prefix` (any case), in username order, `limit` of them after
 * the username key `after` (the last of the previous page). Served by the unique index on
 * username_key: a page costs the same at a thousand users and at a million.
 */
export async function searchUsers(
  db: Executor,
  query: { prefix: string; after?: string; limit: number },
): Promise<UserSummary[]> {
  const key = query.prefix.toLowerCase();
  let select = db
    .selectFrom('user')
    .select(['id', 'username', 'username_key', 'mfa_enabled_at', 'is_operator', 'created_at'])
    .orderBy('username_key')
    .limit(query.limit);
  // A range on the index: the keys from the prefix up to the prefix with its last character
  // raised by one ("al" up to "am"), which every key starting with "al" sorts below.
  const [last] = [...key].slice(-1);
  if (last !== undefined) {
    const upper = [...key].slice(0, -1).join('') + String.fromCodePoint((last.codePointAt(0) ?? 0) + 1);
    select = select.where('username_key', '>=', key).where('username_key', '<', upper);
  }
  if (query.after !== undefined) select = select.where('username_key', '>', query.after.toLowerCase());
  const rows = await select.execute();
  return rows.map((row) => ({
    id: row.id,
    username: row.username,
    mfaEnabled: row.mfa_enabled_at !== null,
    isOperator: row.is_operator === 1,
    createdAt: new Date(row.created_at),
  }));
}

/** Enrolment SMS per country per clock hour since `since` (the counters the country budgets keep). */
export async function smsSendsPerCountryHour(
  db: Executor,
  since: Date,
): Promise<{ hour: string; country: string; sends: number }[]> {
  const rows = await db
    .selectFrom('sms_counter')
    .select(['window_start', 'scope', 'sends'])
    .where('scope', 'like', 'country:%')
    .where('window_start', '>=', since.toISOString())
    .orderBy('window_start')
    .orderBy('scope')
    .execute();
  return rows.map((row) => ({
    hour: row.window_start,
    country: row.scope.slice('country:'.length),
    sends: Number(row.sends),
  }));
}

/** Password and code-flow sign-ins per clock hour since `since`: succeeded, refused, throttled. */
export async function signInsPerHour(
  db: Executor,
  since: Date,
): Promise<{ hour: string; succeeded: number; refused: number; throttled: number }[]> {
  // occurred_at is ISO 8601 text on both databases: its first 13 characters name the hour.
  const hour = sql<string>`substr(occurred_at, 1, 13)`;
  const count = (outcome: string) => sql<number>`sum(case when outcome = ${outcome} then 1 else 0 end)`;
  const rows = await db
    .selectFrom('security_event')
    .select([
      hour.as('hour'),
      count('succeeded').as('succeeded'),
      count('failed').as('refused'),
      count('throttled').as('throttled'),
    ])
    .where('type', '=', 'login')
    .where('occurred_at', '>=', since.toISOString())
    .groupBy(hour)
    .orderBy(hour)
    .execute();
  return rows.map((row) => ({
    hour: `${row.hour}:00:00.000Z`,
    succeeded: Number(row.succeeded),
    refused: Number(row.refused),
    throttled: Number(row.throttled),
  }));
}
