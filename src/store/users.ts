import { type Selectable, sql } from 'kysely';
import type { Executor, UserTable } from './database.js';

export interface User {
  id: string;
  username: string;
  /** The username as compared: unique, folded by the users domain. */
  usernameKey: string;
  passwordHash: string;
}

/** A user as a login reads it. */
export interface StoredUser extends User {
  /** Moves on each time every login of the user ends (`endLoginsInFlight`). */
  sessionGeneration: number;
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
  const row = await db
    .selectFrom('user')
    .select(USER_COLUMNS)
    .where((eb) => eb.or([eb('username_key', '=', usernameKey), eb('username', '=', username)]))
    .orderBy(sql`case when username = ${username} then 0 else 1 end`)
    .executeTakeFirst();
  return row && toUser(row);
}

/** The user with this id, or undefined. */
export async function findUserById(db: Executor, id: string): Promise<StoredUser | undefined> {
  if (id.includes('\0')) return undefined; // as in findUserByUsername
  const row = await db.selectFrom('user').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toUser(row);
}

const USER_COLUMNS = ['id', 'username', 'username_key', 'password_hash', 'session_generation'] as const;

function toUser(row: Pick<Selectable<UserTable>, (typeof USER_COLUMNS)[number]>): StoredUser {
  return {
    id: row.id,
    username: row.username,
    usernameKey: row.username_key,
    passwordHash: row.password_hash,
    sessionGeneration: row.session_generation,
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

/** Deletes the user and (by cascade) everything of theirs; false when there was none. */
export async function deleteUser(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false;
  const row = await db.deleteFrom('user').where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}
