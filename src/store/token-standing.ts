import type { Statement } from 'better-sqlite3';
import type { Selectable } from 'kysely';
import type { Pool } from 'pg';
import { type DriverHandle, driverHandleOf, type Executor, type MfaFactorTable } from './database.js';
import { FACTOR_COLUMNS, type Factor, type FactorRow, toFactor } from './factor-record.js';
import { listFactors } from './mfa-factors.js';
import { findTokenStanding } from './revoked-tokens.js';

/** What stands between a well-signed access token and its use, with its user's MFA factors. */
export interface StandingWithFactors {
  userExists: boolean;
  isRevoked: boolean;
  /** Every factor of the user, pending ones included, oldest first (as `listFactors`). */
  factors: Factor[];
}

/** The factor's columns as `toFactor` reads them, from the join's `f`. */
const FACTOR_SELECT = FACTOR_COLUMNS.map((column) => `f.${column}`).join(', ');

/**
 * One statement for `GET /mfa/`, the hottest call: whether the user exists (a row or none),
 * whether the token's jti or its login's sid is revoked, and the user's factors. The user joins
 * its factors, so a user without any still answers one row, of nulls.
 */
const SQLITE_TEXT = `
  select exists (select 1 from revoked_token where id in (@jti, @sid)) as is_revoked,
    ${FACTOR_SELECT}
  from "user" u left join mfa_factor f on f.user_id = u.id
  where u.id = @user
  order by f.created_at, f.id`;

/**
 * The same for every request of a batch at once (PostgreSQL): each asked (user, jti, sid) is
 * numbered, and its rows carry its number.
 */
const POSTGRES_BATCH_TEXT = `
  select a.n, exists (select 1 from revoked_token where id in (a.jti, a.sid)) as is_revoked,
    ${FACTOR_SELECT}
  from unnest($1::text[], $2::text[], $3::text[]) with ordinality as a(user_id, jti, sid, n)
  join "user" u on u.id = a.user_id
  left join mfa_factor f on f.user_id = u.id
  order by a.n, f.created_at, f.id`;

type Row = { is_revoked: number | boolean } & { [K in keyof Selectable<MfaFactorTable>]: MfaFactorTable[K] | null };
type Asked = [user: string, jti: string, sid: string];

const sqliteStatements = new WeakMap<object, Statement<[{ user: string; jti: string; sid: string }], Row>>();
const postgresBatches = new WeakMap<Pool, (asked: Asked) => Promise<Row[]>>();

/**
 * `findTokenStanding` and `listFactors` in one round trip: a statement prepared once on SQLite;
 * on PostgreSQL one named (server-prepared) statement for all the requests that arrive in the same
 * turn of the event loop. Inside a transaction, or on SQLite while one is open on the connection,
 * it takes Kysely's path, so it never reads another request's uncommitted rows.
 */
export async function findStandingWithFactors(
  db: Executor,
  userId: string,
  jti: string,
  sessionId: string,
): Promise<StandingWithFactors> {
  const driver = driverHandleOf(db);
  const rows = driver && (await readRows(driver, [userId, jti, sessionId]));
  if (!rows) {
    const standing = await findTokenStanding(db, userId, [jti, sessionId]);
    return { ...standing, factors: await listFactors(db, userId) };
  }
  const first = rows[0];
  return {
    userExists: first !== undefined,
    // SQLite answers 0 or 1, PostgreSQL a boolean.
    isRevoked: Boolean(first?.is_revoked),
    factors: rows.filter((row) => row.id !== null).map((row) => toFactor(row as FactorRow)),
  };
}

async function readRows(driver: DriverHandle, asked: Asked): Promise<Row[] | undefined> {
  if (driver.dialect === 'postgres') {
    let read = postgresBatches.get(driver.pool);
    if (!read) {
      read = batchedReads(driver.pool);
      postgresBatches.set(driver.pool, read);
    }
    return read(asked);
  }
  const { connection } = driver;
  if (connection.inTransaction) return undefined;
  let statement = sqliteStatements.get(connection);
  if (!statement) {
    statement = connection.prepare<[{ user: string; jti: string; sid: string }], Row>(SQLITE_TEXT);
    sqliteStatements.set(connection, statement);
  }
  const [user, jti, sid] = asked;
  return statement.all({ user, jti, sid });
}

/**
 * Each round trip to PostgreSQL costs the service about as much CPU as the rest of the request
 * (the driver, the pool, two system calls) and the server as much again: the reads asked for in
 * one turn of the event loop (under load, every request whose bytes arrived together) go out as
 * one statement, after the turn's I/O, and each gets its own rows (docs/PERFORMANCE.md).
 */
function batchedReads(pool: Pool): (asked: Asked) => Promise<Row[]> {
  let waiting: { asked: Asked; resolve: (rows: Row[]) => void; reject: (error: unknown) => void }[] = [];

  async function send() {
    const batch = waiting;
    waiting = [];
    try {
      const columns = [0, 1, 2].map((column) => batch.map(({ asked }) => asked[column]));
      // Prepared once per connection, as every statement with parameters (database.ts).
      const { rows } = await pool.query<Row & { n: number }>(POSTGRES_BATCH_TEXT, columns);
      const byRequest = batch.map((): Row[] => []);
      // ordinality counts from 1 (a bigint, read as a number: database.ts).
      for (const row of rows) byRequest[row.n - 1]?.push(row);
      for (const [index, { resolve }] of batch.entries()) resolve(byRequest[index] ?? []);
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
  }

  return (asked) =>
    new Promise((resolve, reject) => {
      if (waiting.length === 0) setImmediate(send);
      waiting.push({ asked, resolve, reject });
    });
}
