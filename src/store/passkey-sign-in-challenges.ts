import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/**
 * Records a passkey sign-in challenge as used (the challenges themselves are signed, not stored:
 * making one costs no write). False when it was used before: a replay, or a racing request.
 */
export async function useSignInChallenge(
  db: Executor,
  challenge: { challengeHash: string; expiresAt: Date },
  now: Date,
): Promise<boolean> {
  const row = await db
    .insertInto('passkey_sign_in_challenge')
    .values({
      challenge_hash: challenge.challengeHash,
      expires_at: challenge.expiresAt.toISOString(),
      used_at: now.toISOString(),
      created_at: now.toISOString(),
    })
    .onConflict((conflict) => conflict.column('challenge_hash').doNothing())
    .returning('challenge_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Forgets at most `limit` used challenges that ended before `cutoff`, oldest first; returns how many.
 */
export async function deleteSignInChallengeBatchBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'passkey_sign_in_challenge', cutoff, limit);
}
