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

/** True when any of the ids (a jti, a sid) is revoked. */
export async function isAnyRevoked(db: Executor, ids: string[]): Promise<boolean> {
  const row = await db.selectFrom('revoked_token').select('id').where('id', 'in', ids).executeTakeFirst();
  return row !== undefined;
}

/** Forgets revocations whose tokens have all expired. */
export async function pruneRevokedTokens(db: Executor, now: Date): Promise<void> {
  await db.deleteFrom('revoked_token').where('expires_at', '<=', now.toISOString()).execute();
}
