import { sql } from 'kysely';
import type { Executor } from './database.js';
import { countAttempt, markUsed } from './one-time-codes.js';

/** The user's address as it stands: `verifiedAt` undefined while it is not proved. */
export interface UserEmail {
  email: string;
  verifiedAt?: Date;
}

export interface EmailCode {
  id: string;
  userId: string;
  email: string;
  codeHash: string;
  attempts: number;
  expiresAt: Date;
  usedAt?: Date;
  createdAt: Date;
}

/** The user's address, or undefined when they have none (or no such user). */
export async function findUserEmail(db: Executor, userId: string): Promise<UserEmail | undefined> {
  const row = await db
    .selectFrom('user')
    .select(['email', 'email_verified_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!row?.email) return undefined;
  return { email: row.email, verifiedAt: row.email_verified_at ? new Date(row.email_verified_at) : undefined };
}

/**
 * The accounts whose verified address is `email` (compared folded to lower case), with their
 * usernames and whether they have a password; at most `limit` of them, oldest first.
 */
export async function listUsersWithVerifiedEmail(
  db: Executor,
  email: string,
  limit: number,
): Promise<{ id: string; username: string; email: string; passwordHash: string }[]> {
  const rows = await db
    .selectFrom('user')
    .select(['id', 'username', 'email', 'password_hash'])
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .where('email_verified_at', 'is not', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    username: row.username,
    email: row.email ?? email,
    passwordHash: row.password_hash,
  }));
}

/** Sets the user's address as verified at `now`. Returns false when there is no such user. */
export async function setVerifiedEmail(db: Executor, userId: string, email: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('user')
    .set({ email, email_verified_at: now.toISOString() })
    .where('id', '=', userId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Stores a new code for the user, replacing the earlier one, unless that one is alive and was made
 * after `cooldownStart`. Returns false when the cooldown holds (a racing request took the slot).
 */
export async function replaceEmailCode(
  db: Executor,
  code: Omit<EmailCode, 'attempts' | 'usedAt'>,
  { cooldownStart, maxAttempts }: { cooldownStart: Date; maxAttempts: number },
): Promise<boolean> {
  const fresh = {
    id: code.id,
    email: code.email,
    code_hash: code.codeHash,
    attempts: 0,
    expires_at: code.expiresAt.toISOString(),
    used_at: null,
    created_at: code.createdAt.toISOString(),
  };
  const row = await db
    .insertInto('email_code')
    .values({ ...fresh, user_id: code.userId })
    .onConflict((conflict) =>
      conflict
        .column('user_id')
        .doUpdateSet(fresh)
        // CONTRACT §5's cooldown holds only while the code sent is alive.
        .where((eb) =>
          eb.or([
            eb('email_code.created_at', '<=', cooldownStart.toISOString()),
            eb('email_code.used_at', 'is not', null),
            eb('email_code.attempts', '>=', maxAttempts),
            eb('email_code.expires_at', '<=', code.createdAt.toISOString()),
          ]),
        ),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The user's current code, or undefined. */
export async function findEmailCode(db: Executor, userId: string): Promise<EmailCode | undefined> {
  const row = await db.selectFrom('email_code').selectAll().where('user_id', '=', userId).executeTakeFirst();
  return (
    row && {
      id: row.id,
      userId: row.user_id,
      email: row.email,
      codeHash: row.code_hash,
      attempts: row.attempts,
      expiresAt: new Date(row.expires_at),
      usedAt: row.used_at ? new Date(row.used_at) : undefined,
      createdAt: new Date(row.created_at),
    }
  );
}

/** Counts one attempt at the code and returns its number; undefined once spent, replaced or out of attempts. */
export function countEmailCodeAttempt(db: Executor, id: string, maxAttempts: number): Promise<number | undefined> {
  return countAttempt(db, id, maxAttempts, 'email_code');
}

/** Marks the code used. Returns false when a concurrent request used it first. */
export function markEmailCodeUsed(db: Executor, id: string, now: Date): Promise<boolean> {
  return markUsed(db, id, now, 'email_code');
}

/** Deletes the code `id` (its mail was refused: nothing was sent, so the cooldown is given back). */
export async function deleteEmailCode(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('email_code').where('id', '=', id).execute();
}
