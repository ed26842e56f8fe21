import type { Executor } from './database.js';

export interface User {
  id: string;
  username: string;
  passwordHash: string;
}

/** Inserts the user; returns false when the username is taken. */
export async function insertUser(db: Executor, user: User, now: Date): Promise<boolean> {
  const row = await db
    .insertInto('user')
    .values({ id: user.id, username: user.username, password_hash: user.passwordHash, created_at: now.toISOString() })
    .onConflict((conflict) => conflict.column('username').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The user with this username, or undefined. */
export async function findUserByUsername(db: Executor, username: string): Promise<User | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (username.includes('\0')) return undefined;
  const row = await db
    .selectFrom('user')
    .select(['id', 'username', 'password_hash'])
    .where('username', '=', username)
    .executeTakeFirst();
  return row && { id: row.id, username: row.username, passwordHash: row.password_hash };
}

/** True when a user with this id exists. */
export async function userExists(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false; // as in findUserByUsername
  const row = await db.selectFrom('user').select('id').where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}
