import type { Executor } from './database.js';

export type ChallengePurpose = 'register' | 'login';

/** Stores a fresh challenge for the user and purpose, replacing (and so killing) the earlier one. */
export async function replaceChallenge(
  db: Executor,
  challenge: {
    userId: string;
    purpose: ChallengePurpose;
    challengeHash: string;
    pendingName?: string;
    expiresAt: Date;
  },
  now: Date,
): Promise<void> {
  const fresh = {
    challenge_hash: challenge.challengeHash,
    pending_name: challenge.pendingName ?? null,
    expires_at: challenge.expiresAt.toISOString(),
    used_at: null,
    created_at: now.toISOString(),
  };
  await db
    .insertInto('webauthn_challenge')
    .values({ ...fresh, user_id: challenge.userId, purpose: challenge.purpose })
    .onConflict((conflict) => conflict.columns(['user_id', 'purpose']).doUpdateSet(fresh))
    .execute();
}

/** The user's unspent, unexpired challenge for the purpose, or undefined. */
export async function findLiveChallenge(
  db: Executor,
  userId: string,
  purpose: ChallengePurpose,
  now: Date,
): Promise<{ challengeHash: string; pendingName?: string } | undefined> {
  const row = await db
    .selectFrom('webauthn_challenge')
    .select(['challenge_hash', 'pending_name'])
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return row && { challengeHash: row.challenge_hash, pendingName: row.pending_name ?? undefined };
}

/** Spends the challenge in one conditional update; false when it was spent, replaced or expired first. */
export async function spendChallenge(
  db: Executor,
  userId: string,
  purpose: ChallengePurpose,
  challengeHash: string,
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('webauthn_challenge')
    .set({ used_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('challenge_hash', '=', challengeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}
