import type { Executor } from './database.js';

/**
 * Records a revoked access-token `jti`, or a revoked login (`sid`, the refresh-token family id),
 * until `expiresAt`, after which every access token it could refuse has expired anyway.
 */
export async function insertRevokedToken(db: Executor, id: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('revoked_token')
    .values({ id, expires_at: expiresAt.toISOString() })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ expires_at: expiresAt.toISOString() }))
    .execute();
}

/**
 * What stands between a well-signed access token and its use, in one round trip: whether its
 * user still exists, and whether any of the ids (its jti, its login's sid) is revoked.
 */
export async function findTokenStanding(
  db: Executor,
  userId: string,
  ids: string[],
): Promise<{ userExists: boolean; isRevoked: boolean }> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.exists(eb.selectFrom('user').select('id').where('id', '=', userId)).as('user_exists'),
      eb.exists(eb.selectFrom('revoked_token').select('id').where('id', 'in', ids)).as('is_revoked'),
    ])
    .executeTakeFirstOrThrow();
  // SQLite answers 0 or 1, PostgreSQL a boolean.
  return { userExists: Boolean(row.user_exists), isRevoked: Boolean(row.is_revoked) };
}

/** Forgets revocations whose tokens have all expired. */
export async function pruneRevokedTokens(db: Executor, now: Date): Promise<void> {
  await db.deleteFrom('revoked_token').where('expires_at', '<=', now.toISOString()).execute();
}
