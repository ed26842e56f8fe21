import { sql } from 'kysely';
import type { Executor } from './database.js';

export interface User {
  id: string;
  username: string;
  /** The username as compared: unique, folded by the users domain. */
  usernameKey: string;
  passwordHash: string;
}

/** Inserts the user; returns false when the username (as folded) is taken. */
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
    .onConflict((conflict) => conflict.column('username_key').doNothing())
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
): Promise<User | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (username.includes('\0')) return undefined;
  const row = await db
    .selectFrom('user')
    .select(['id', 'username', 'username_key', 'password_hash'])
    .where((eb) => eb.or([eb('username_key', '=', usernameKey), eb('username', '=', username)]))
    .orderBy(sql`case when username = ${username} then 0 else 1 end`)
    .executeTakeFirst();
  return row && { id: row.id, username: row.username, usernameKey: row.username_key, passwordHash: row.password_hash };
}

/** The user with this id, or undefined. */
export async function findUserById(db: Executor, id: string): Promise<User | undefined> {
  if (id.includes('\0')) return undefined; // as in findUserByUsername
  const row = await db
    .selectFrom('user')
    .select(['id', 'username', 'username_key', 'password_hash'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row && { id: row.id, username: row.username, usernameKey: row.username_key, passwordHash: row.password_hash };
}

/** Deletes the user and (by cascade) everything of theirs; false when there was none. */
export async function deleteUser(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false;
  const row = await db.deleteFrom('user').where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}
