import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/** Stores a new invite for the user; the user's earlier ones, if unused, stop working. */
export async function replaceInvite(
  db: Executor,
  invite: { tokenHash: string; userId: string; expiresAt: Date },
  now: Date,
): Promise<void> {
  await db
    .updateTable('invite')
    .set({ used_at: now.toISOString() })
    .where('user_id', '=', invite.userId)
    .where('used_at', 'is', null)
    .execute();
  await db
    .insertInto('invite')
    .values({
      token_hash: invite.tokenHash,
      user_id: invite.userId,
      expires_at: invite.expiresAt.toISOString(),
      used_at: null,
      created_at: now.toISOString(),
    })
    .execute();
}

/** The user of the unused, unexpired invite with this hash, or undefined. */
export async function findLiveInvite(
  db: Executor,
  tokenHash: string,
  now: Date,
): Promise<{ userId: string } | undefined> {
  const row = await db
    .selectFrom('invite')
    .select('user_id')
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return row && { userId: row.user_id };
}

/** Spends the invite; false when it was spent (or expired) first. */
export async function spendInvite(db: Executor, tokenHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('invite')
    .set({ used_at: now.toISOString() })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .returning('token_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/** Forgets at most `limit` invites that ended before `cutoff`, oldest first; returns how many. */
export async function deleteInvitesBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'invite', cutoff, limit);
}
