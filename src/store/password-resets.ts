import type { Executor } from './database.js';

/** A password-reset link as stored: its keyed hash, never the token. */
export interface PasswordReset {
  userId: string;
  tokenHash: string;
  email: string;
  expiresAt: Date;
  usedAt?: Date;
}

/** Keeps the user's new link, replacing (and so killing) any earlier one. */
export async function replacePasswordReset(
  db: Executor,
  reset: Omit<PasswordReset, 'usedAt'>,
  now: Date,
): Promise<void> {
  const fresh = {
    token_hash: reset.tokenHash,
    email: reset.email,
    expires_at: reset.expiresAt.toISOString(),
    used_at: null,
    created_at: now.toISOString(),
  };
  await db
    .insertInto('password_reset')
    .values({ ...fresh, user_id: reset.userId })
    .onConflict((conflict) => conflict.column('user_id').doUpdateSet(fresh))
    .execute();
}

/** The link with this hash, or undefined. */
export async function findPasswordReset(db: Executor, tokenHash: string): Promise<PasswordReset | undefined> {
  const row = await db.selectFrom('password_reset').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  return (
    row && {
      userId: row.user_id,
      tokenHash: row.token_hash,
      email: row.email,
      expiresAt: new Date(row.expires_at),
      usedAt: row.used_at ? new Date(row.used_at) : undefined,
    }
  );
}

/** Spends the link. Returns false when a concurrent request spent it first, or it expired meanwhile. */
export async function markPasswordResetUsed(db: Executor, tokenHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('password_reset')
    .set({ used_at: now.toISOString() })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null) // the guard that makes it single-use
    .where('expires_at', '>', now.toISOString())
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}
