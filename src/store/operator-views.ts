import { type Selectable, sql } from 'kysely';
import type { Executor, SignInHourTable, UserTable } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

// What the operators' console reads (CONTRACT §21), aggregated in SQL: a page of users at a time,
// and counts per hour, never rows loaded to be counted here.

export interface UserSummary {
  id: string;
  username: string;
  email?: string;
  mfaEnabled: boolean;
  isOperator: boolean;
  createdAt: Date;
}

/** The keys from `prefix` up to the prefix with its last character raised by one ("al" up to "am"). */
function prefixRange(prefix: string): [string, string] | undefined {
  const [last] = [...prefix].slice(-1);
  if (last === undefined) return undefined;
  return [prefix, [...prefix].slice(0, -1).join('') + String.fromCodePoint((last.codePointAt(0) ?? 0) + 1)];
}

/**
 * Users whose username starts with `prefix` (any case), in username order, `limit` of them after
 * the username key `after` (the last of the previous page); with `byEmail`, users whose address
 * starts with it, in address order, after the address `after`. Each served by an index (the
 * unique username_key, and lower(email)): a page costs the same at a thousand users and at a million.
 */
export async function searchUsers(
  db: Executor,
  query: { prefix: string; byEmail: boolean; after?: string; limit: number },
): Promise<UserSummary[]> {
  // The same expression as the index user_email_key, so that the database uses it.
  const key = query.byEmail ? sql<string>`lower(email)` : sql<string>`username_key`;
  let select = db.selectFrom('user').select(SUMMARY_COLUMNS).orderBy(key).limit(query.limit);
  if (query.byEmail) select = select.where('email', 'is not', null);
  const range = prefixRange(query.prefix.toLowerCase());
  if (range) select = select.where(key, '>=', range[0]).where(key, '<', range[1]);
  if (query.after !== undefined) select = select.where(key, '>', query.after.toLowerCase());
  const rows = await select.execute();
  return rows.map(toSummary);
}

/** The user with this id, or undefined. */
export async function findUserSummary(db: Executor, id: string): Promise<UserSummary | undefined> {
  if (id.includes('\0')) return undefined; // PostgreSQL text cannot hold NUL
  const row = await db.selectFrom('user').select(SUMMARY_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toSummary(row);
}

const SUMMARY_COLUMNS = ['id', 'username', 'email', 'mfa_enabled_at', 'is_operator', 'created_at'] as const;

function toSummary(row: Pick<Selectable<UserTable>, (typeof SUMMARY_COLUMNS)[number]>): UserSummary {
  return {
    id: row.id,
    username: row.username,
    ...(row.email !== null && { email: row.email }),
    mfaEnabled: row.mfa_enabled_at !== null,
    isOperator: row.is_operator === 1,
    createdAt: new Date(row.created_at),
  };
}

/** One of a user's logins that may still be refreshed: its current refresh token's family. */
export interface LiveLogin {
  id: string;
  clientId: string;
  clientName?: string;
  amr: string[];
  acr: string;
  authTime: Date;
  lastRefreshedAt: Date;
  expiresAt: Date;
  isBrowserSignIn: boolean;
}

/** The user's logins whose refresh token is unspent, unrevoked and unexpired, the latest used first. */
export async function listLiveLogins(db: Executor, userId: string, now: Date): Promise<LiveLogin[]> {
  const rows = await db
    .selectFrom('refresh_token')
    .leftJoin('oauth_client', 'oauth_client.id', 'refresh_token.client_id')
    .select([
      'refresh_token.family_id',
      'refresh_token.client_id',
      'oauth_client.name',
      'refresh_token.amr',
      'refresh_token.acr',
      'refresh_token.auth_time',
      'refresh_token.created_at',
      'refresh_token.expires_at',
      'refresh_token.sign_in_session_id',
    ])
    .where('refresh_token.user_id', '=', userId)
    .where('refresh_token.used_at', 'is', null)
    .where('refresh_token.revoked_at', 'is', null)
    .where('refresh_token.expires_at', '>', now.toISOString())
    .orderBy('refresh_token.created_at', 'desc')
    .limit(100)
    .execute();
  return rows.map((row) => ({
    id: row.family_id,
    clientId: row.client_id,
    ...(row.name !== null && { clientName: row.name }),
    amr: JSON.parse(row.amr) as string[],
    acr: row.acr,
    authTime: new Date(row.auth_time * 1000),
    lastRefreshedAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    isBrowserSignIn: row.sign_in_session_id !== null,
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

type HourCounts = Omit<SignInHourTable, 'hour'> & { hour: string };

const HOUR_MS = 3_600_000;
/**
 * A login's event is written by the request that judged it, seconds after the clock read its time:
 * an hour that ended this long ago gets no more events, and its counts can be kept.
 */
const SETTLE_MS = 10 * 60_000;

/**
 * Password and code-flow sign-ins per clock hour since `since` (an hour's start): succeeded,
 * refused, throttled. The hours that have settled are read from sign_in_hour, where the retention
 * worker keeps them counted (keepSettledSignInHours); any it has not reached yet are counted here
 * and kept. Only the hours since then are counted from the audit trail on each request: about an
 * hour of login events, not the week's (issue 33: 700 000 rows at ten million).
 */
export async function signInsPerHour(
  db: Executor,
  since: Date,
  now: Date,
): Promise<{ hour: string; succeeded: number; refused: number; throttled: number }[]> {
  const settledUntil = startOfHourMs(now.getTime() - SETTLE_MS);
  await keepSettledSignInHours(db, since, now, Number.POSITIVE_INFINITY);
  const kept =
    since.getTime() < settledUntil
      ? await db
          .selectFrom('sign_in_hour')
          .selectAll()
          .where('hour', '>=', since.toISOString())
          .where('hour', '<', new Date(settledUntil).toISOString())
          .execute()
      : [];
  const recent = await countLoginsPerHour(db, new Date(Math.max(since.getTime(), settledUntil)).toISOString());
  return [...kept, ...recent]
    .filter((row) => Number(row.logins) > 0)
    .sort((a, b) => (a.hour < b.hour ? -1 : 1))
    .map((row) => ({
      hour: row.hour,
      succeeded: Number(row.succeeded),
      refused: Number(row.refused),
      throttled: Number(row.throttled),
    }));
}

/**
 * Counts the login events of the settled hours since `since` that sign_in_hour does not hold yet,
 * at most `maxHours` of them from the first missing one, and keeps them, those without a login too
 * (so that none is counted again); answers how many hours it kept. Two nodes or requests counting
 * the same hour at once keep it once, by its key, with the same counts.
 */
export async function keepSettledSignInHours(db: Executor, since: Date, now: Date, maxHours: number): Promise<number> {
  const settledUntil = startOfHourMs(now.getTime() - SETTLE_MS);
  const hours: string[] = [];
  for (let at = startOfHourMs(since.getTime()); at < settledUntil; at += HOUR_MS)
    hours.push(new Date(at).toISOString());
  const [first] = hours;
  if (first === undefined) return 0;
  const kept = new Set(
    (
      await db
        .selectFrom('sign_in_hour')
        .select('hour')
        .where('hour', '>=', first)
        .where('hour', '<', new Date(settledUntil).toISOString())
        .execute()
    ).map((row) => row.hour),
  );
  const firstMissing = hours.findIndex((hour) => !kept.has(hour));
  if (firstMissing === -1) return 0;
  const chunk = hours.slice(firstMissing, firstMissing + Math.min(maxHours, hours.length));
  const until = new Date(Date.parse(chunk.at(-1) ?? first) + HOUR_MS).toISOString();
  const counted = new Map((await countLoginsPerHour(db, chunk[0] ?? first, until)).map((row) => [row.hour, row]));
  const missing = chunk
    .filter((hour) => !kept.has(hour))
    .map((hour) => counted.get(hour) ?? { hour, logins: 0, succeeded: 0, refused: 0, throttled: 0 });
  await db
    .insertInto('sign_in_hour')
    .values(missing)
    .onConflict((conflict) => conflict.column('hour').doNothing())
    .execute();
  return missing.length;
}

function startOfHourMs(ms: number): number {
  return ms - (ms % HOUR_MS);
}

/** Login events per clock hour from `from` (an ISO time), before `until` when given, read by the index on time. */
async function countLoginsPerHour(db: Executor, from: string, until?: string): Promise<HourCounts[]> {
  // occurred_at is ISO 8601 text on both databases: its first 13 characters name the hour.
  const hour = sql<string>`substr(occurred_at, 1, 13)`;
  const count = (outcome: string) => sql<number>`sum(case when outcome = ${outcome} then 1 else 0 end)`;
  let select = db
    .selectFrom('security_event')
    .select([
      hour.as('hour'),
      sql<number>`count(*)`.as('logins'),
      count('succeeded').as('succeeded'),
      count('failed').as('refused'),
      count('throttled').as('throttled'),
    ])
    .where('type', '=', 'login')
    .where('occurred_at', '>=', from);
  if (until !== undefined) select = select.where('occurred_at', '<', until);
  const rows = await select.groupBy(hour).execute();
  return rows.map((row) => ({
    hour: `${row.hour}:00:00.000Z`,
    logins: Number(row.logins),
    succeeded: Number(row.succeeded),
    refused: Number(row.refused),
    throttled: Number(row.throttled),
  }));
}

/** Deletes at most `limit` kept hours that began before `cutoff`, oldest first. */
export async function deleteSignInHoursBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'sign_in_hour', cutoff, limit);
}
