import type { Statement } from 'better-sqlite3';
import type { Selectable } from 'kysely';
import { type DriverHandle, driverHandleOf, type Executor, type MfaFactorTable } from './database.js';
import { type Factor, toFactor } from './factor-record.js';
import { listFactors } from './mfa-factors.js';
import { findTokenStanding } from './revoked-tokens.js';

/** What stands between a well-signed access token and its use, with its user's MFA factors. */
export interface StandingWithFactors {
  userExists: boolean;
  isRevoked: boolean;
  /** Every factor of the user, pending ones included, oldest first (as `listFactors`). */
  factors: Factor[];
}

/**
 * One statement for `GET /mfa/`, the hottest call: whether the user exists (a row or none),
 * whether the token's jti or its login's sid is revoked, and the user's factors. The user joins
 * its factors, so a user without any still answers one row, of nulls.
 */
const statementText = (parameter: (name: 'user' | 'jti' | 'sid') => string) => `
  select exists (select 1 from revoked_token where id in (${parameter('jti')}, ${parameter('sid')})) as is_revoked,
    f.id, f.user_id, f.type, f.name, f.is_default, f.status, f.created_at, f.verified_at, f.last_used_at,
    f.phone_number, f.sealed_secret, f.data, f.counter
  from "user" u left join mfa_factor f on f.user_id = u.id
  where u.id = ${parameter('user')}
  order by f.created_at, f.id`;
const SQLITE_TEXT = statementText((name) => `@${name}`);
const POSTGRES_TEXT = statementText((name) => ({ user: '$1', jti: '$2', sid: '$3' })[name]);

type Row = { is_revoked: number | boolean } & { [K in keyof Selectable<MfaFactorTable>]: MfaFactorTable[K] | null };

const sqliteStatements = new WeakMap<object, Statement<[{ user: string; jti: string; sid: string }], Row>>();

/**
 * `findTokenStanding` and `listFactors` in one round trip: a statement prepared once on SQLite,
 * one named (server-prepared) query on PostgreSQL. Inside a transaction, or on SQLite while one is
 * open on the connection, it takes Kysely's path, so it never reads another request's uncommitted rows.
 */
export async function findStandingWithFactors(
  db: Executor,
  userId: string,
  jti: string,
  sessionId: string,
): Promise<StandingWithFactors> {
  const driver = driverHandleOf(db);
  const rows = driver && (await readRows(driver, userId, jti, sessionId));
  if (!rows) {
    const standing = await findTokenStanding(db, userId, [jti, sessionId]);
    return { ...standing, factors: await listFactors(db, userId) };
  }
  const first = rows[0];
  return {
    userExists: first !== undefined,
    // SQLite answers 0 or 1, PostgreSQL a boolean.
    isRevoked: Boolean(first?.is_revoked),
    factors: rows.filter((row) => row.id !== null).map((row) => toFactor(row as Selectable<MfaFactorTable>)),
  };
}

async function readRows(driver: DriverHandle, ...parameters: [string, string, string]): Promise<Row[] | undefined> {
  if (driver.dialect === 'postgres') {
    return (
      await driver.pool.query<Row>({ name: 'find-standing-with-factors', text: POSTGRES_TEXT, values: parameters })
    ).rows;
  }
  const { connection } = driver;
  if (connection.inTransaction) return undefined;
  let statement = sqliteStatements.get(connection);
  if (!statement) {
    statement = connection.prepare<[{ user: string; jti: string; sid: string }], Row>(SQLITE_TEXT);
    sqliteStatements.set(connection, statement);
  }
  const [user, jti, sid] = parameters;
  return statement.all({ user, jti, sid });
}
