import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

export interface MfaToken {
  tokenHash: string;
  userId: string;
  clientId: string;
  requiredAcr: string;
  scope: string;
  expiresAt: Date;
}

/** A live token as read back: it was made in the request that gave the password. */
export interface StoredMfaToken extends MfaToken {
  /** When the password was given, epoch seconds: the finished login's auth_time. */
  authTime: number;
}

export async function insertMfaToken(db: Executor, token: MfaToken, now: Date): Promise<void> {
  await db
    .insertInto('mfa_token')
    .values({
      token_hash: token.tokenHash,
      user_id: token.userId,
      client_id: token.clientId,
      required_acr: token.requiredAcr,
      scope: token.scope,
      expires_at: token.expiresAt.toISOString(),
      used_at: null,
      created_at: now.toISOString(),
    })
    .execute();
}

/** The unspent, unexpired token with this hash, or undefined. */
export async function findLiveMfaToken(
  db: Executor,
  tokenHash: string,
  now: Date,
): Promise<StoredMfaToken | undefined> {
  const row = await db
    .selectFrom('mfa_token')
    .select(['token_hash', 'user_id', 'client_id', 'required_acr', 'scope', 'expires_at', 'created_at'])
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return (
    row && {
      tokenHash: row.token_hash,
      userId: row.user_id,
      clientId: row.client_id,
      requiredAcr: row.required_acr,
      scope: row.scope,
      authTime: Math.floor(new Date(row.created_at).getTime() / 1000),
      expiresAt: new Date(row.expires_at),
    }
  );
}

/** Spends the token in one conditional update; false when a racing request spent it first (or it expired). */
export async function spendMfaToken(db: Executor, tokenHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('mfa_token')
    .set({ used_at: now.toISOString() })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .returning('token_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/** Forgets at most `limit` tokens that can no longer be used, oldest first; returns how many. */
export async function deleteExpiredMfaTokens(db: Executor, now: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'mfa_token', now, limit, { atCutoffToo: true });
}
