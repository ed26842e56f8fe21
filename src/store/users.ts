import { sql } from 'kysely';
import type { Executor } from './database.js';
import { FACTOR_COLUMNS, type Factor, type FactorRow, toFactor } from './factor-record.js';
import { addToMfaEnabledCount } from './mfa-factors.js';

export interface User {
  id: string;
  username: string;
  /** The username as compared: unique, folded by the users domain. */
  usernameKey: string;
  passwordHash: string;
}

/** A user as a login reads it: with their verified second factors, read in the same statement. */
export interface StoredUser extends User {
  /** Moves on each time every login of the user ends (`endLoginsInFlight`). */
  sessionGeneration: number;
  /** The verified second factors, oldest first. */
  factors: Factor[];
}

/** Inserts the user; returns false when the username (as folded, or as spelt) is taken. */
export async function insertUser(db: Executor, user: User, now: Date): Promise<boolean> {
  const row = await db
    .insertInto('user')
    .values({
      id: user.id,
      username: user.username,
      username_key: user.usernameKey,
      password_hash: user.passwordHash,
      created_at: now.toISOString(),
    })
    .onConflict((conflict) => conflict.doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The user whose folded username is `usernameKey`, or undefined. An account made before names
 * were folded that shares its folded name with an older one is found by its exact spelling.
 */
export async function findUserByUsername(
  db: Executor,
  username: string,
  usernameKey: string,
): Promise<StoredUser | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (username.includes('\0')) return undefined;
  const rows = await withVerifiedFactors(db)
    .where((eb) => eb.or([eb('user.username_key', '=', usernameKey), eb('user.username', '=', username)]))
    .orderBy(sql`case when ${sql.ref('user.username')} = ${username} then 0 else 1 end`)
    .orderBy('mfa_factor.created_at')
    .orderBy('mfa_factor.id')
    .execute();
  return toUser(rows);
}

/** The user with this id, or undefined. */
export async function findUserById(db: Executor, id: string): Promise<StoredUser | undefined> {
  if (id.includes('\0')) return undefined; // as in findUserByUsername
  const rows = await withVerifiedFactors(db)
    .where('user.id', '=', id)
    .orderBy('mfa_factor.created_at')
    .orderBy('mfa_factor.id')
    .execute();
  return toUser(rows);
}

const USER_COLUMNS = ['id', 'username', 'username_key', 'password_hash', 'session_generation'] as const;

/**
 * The user's columns beside each verified factor's (`factor_`-prefixed; null for a user with none):
 * a login reads both, and one statement is one round trip to PostgreSQL instead of two.
 */
function withVerifiedFactors(db: Executor) {
  return db
    .selectFrom('user')
    .leftJoin('mfa_factor', (join) =>
      join.onRef('mfa_factor.user_id', '=', 'user.id').on('mfa_factor.status', '=', 'verified'),
    )
    .select(USER_COLUMNS.map((column) => `user.${column}` as const))
    .select(FACTOR_COLUMNS.map((column) => `mfa_factor.${column} as factor_${column}` as const));
}

type UserRow = Awaited<ReturnType<ReturnType<typeof withVerifiedFactors>['execute']>>[number];

/** The first row's user, with the factors of the rows that are that user's. */
function toUser(rows: UserRow[]): StoredUser | undefined {
  const [first] = rows;
  if (!first) return undefined;
  const factors: Factor[] = [];
  for (const row of rows) {
    if (row.id !== first.id || row.factor_id === null) continue;
    // A joined factor's row: its NOT NULL columns hold values.
    const factor = Object.fromEntries(FACTOR_COLUMNS.map((column) => [column, row[`factor_${column}`]]));
    factors.push(toFactor(factor as FactorRow));
  }
  return {
    id: first.id,
    username: first.username,
    usernameKey: first.username_key,
    passwordHash: first.password_hash,
    sessionGeneration: first.session_generation,
    factors,
  };
}

/**
 * CONTRACT §14: every login of the user ends (run it in the transaction of the change). A login
 * still in flight, which read the user before, can no longer start a refresh-token family.
 */
export async function endLoginsInFlight(db: Executor, userId: string): Promise<void> {
  await db
    .updateTable('user')
    .set((eb) => ({ session_generation: eb('session_generation', '+', 1) }))
    .where('id', '=', userId)
    .execute();
}

/** True when the user exists and is an operator. */
export async function isOperator(db: Executor, userId: string): Promise<boolean> {
  const row = await db.selectFrom('user').select('is_operator').where('id', '=', userId).executeTakeFirst();
  return row?.is_operator === 1;
}

/** Grants or revokes the operator role; false when there is no such user. */
export async function setOperator(db: Executor, userId: string, operator: boolean): Promise<boolean> {
  const result = await db
    .updateTable('user')
    .set({ is_operator: operator ? 1 : 0 })
    .where('id', '=', userId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Sets the user's password hash (`NO_PASSWORD_HASH` for none); false when there is no such user. */
export async function setPasswordHash(db: Executor, userId: string, passwordHash: string): Promise<boolean> {
  const row = await db
    .updateTable('user')
    .set({ password_hash: passwordHash })
    .where('id', '=', userId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The user's stored language (CONTRACT §22): a code, null when they follow the browser, undefined
 * when there is no such user.
 */
export async function findUserLanguage(db: Executor, userId: string): Promise<string | null | undefined> {
  if (userId.includes('\0')) return undefined; // as in findUserByUsername
  const row = await db.selectFrom('user').select('language').where('id', '=', userId).executeTakeFirst();
  return row?.language;
}

/** Stores the user's language (null: follow the browser); false when there is no such user. */
export async function setUserLanguage(db: Executor, userId: string, language: string | null): Promise<boolean> {
  const row = await db
    .updateTable('user')
    .set({ language })
    .where('id', '=', userId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Claims the user's throttle notice at `now`: true when none was claimed since `since`. One
 * conditional update, so that of racing blocks one tells the owner.
 */
export async function claimThrottleNotice(db: Executor, userId: string, now: Date, since: Date): Promise<boolean> {
  const row = await db
    .updateTable('user')
    .set({ throttle_noticed_at: now.toISOString() })
    .where('id', '=', userId)
    .where((where) =>
      where.or([where('throttle_noticed_at', 'is', null), where('throttle_noticed_at', '<=', since.toISOString())]),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Deletes the user and (by cascade) everything of theirs, and their outbox messages (no notice
 * waiting for them goes out after); false when there was none.
 */
export async function deleteUser(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false;
  await db.deleteFrom('outbox_message').where('user_id', '=', id).execute();
  const row = await db.deleteFrom('user').where('id', '=', id).returning('mfa_enabled_at').executeTakeFirst();
  if (row?.mfa_enabled_at) await addToMfaEnabledCount(db, -1);
  return row !== undefined;
}
