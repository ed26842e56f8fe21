import type { Acr } from '../logins/step-up.js';
import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/** RFC 6749 §4.1.2: what a code stands for, stored under its hash. */
export interface AuthorizationCode {
  codeHash: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  nonce?: string;
  amr: string[];
  acr: Acr;
  authTime: number;
  signInSessionId: string;
  /** The refresh-token family the code's tokens start. */
  loginId: string;
  sessionGeneration: number;
  expiresAt: Date;
}

export interface StoredAuthorizationCode extends AuthorizationCode {
  usedAt?: Date;
}

export async function insertAuthorizationCode(db: Executor, code: AuthorizationCode, now: Date): Promise<void> {
  await db
    .insertInto('authorization_code')
    .values({
      code_hash: code.codeHash,
      client_id: code.clientId,
      user_id: code.userId,
      redirect_uri: code.redirectUri,
      code_challenge: code.codeChallenge,
      scope: code.scope,
      nonce: code.nonce ?? null,
      amr: JSON.stringify(code.amr),
      acr: code.acr,
      auth_time: code.authTime,
      sign_in_session_id: code.signInSessionId,
      login_id: code.loginId,
      session_generation: code.sessionGeneration,
      created_at: now.toISOString(),
      expires_at: code.expiresAt.toISOString(),
      used_at: null,
      replayed_at: null,
    })
    .execute();
}

/** The code with this hash, used or not, or undefined. */
export async function findAuthorizationCode(
  db: Executor,
  codeHash: string,
): Promise<StoredAuthorizationCode | undefined> {
  const row = await db
    .selectFrom('authorization_code')
    .select([
      'code_hash',
      'client_id',
      'user_id',
      'redirect_uri',
      'code_challenge',
      'scope',
      'nonce',
      'amr',
      'acr',
      'auth_time',
      'sign_in_session_id',
      'login_id',
      'session_generation',
      'expires_at',
      'used_at',
    ])
    .where('code_hash', '=', codeHash)
    .executeTakeFirst();
  return (
    row && {
      codeHash: row.code_hash,
      clientId: row.client_id,
      userId: row.user_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      scope: row.scope,
      nonce: row.nonce ?? undefined,
      amr: JSON.parse(row.amr) as string[],
      acr: row.acr as Acr,
      authTime: row.auth_time,
      signInSessionId: row.sign_in_session_id,
      loginId: row.login_id,
      sessionGeneration: row.session_generation,
      expiresAt: new Date(row.expires_at),
      usedAt: row.used_at ? new Date(row.used_at) : undefined,
    }
  );
}

/** Spends the code; false when it was spent first (a replay, or a racing request). */
export async function spendAuthorizationCode(db: Executor, codeHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('authorization_code')
    .set({ used_at: now.toISOString() })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returning('code_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Marks the code replayed: from now on its first use can no longer store tokens (the refresh
 * family's insert checks this), and the caller revokes what it stored already.
 */
export async function markAuthorizationCodeReplayed(db: Executor, codeHash: string, now: Date): Promise<void> {
  await db
    .updateTable('authorization_code')
    .set({ replayed_at: now.toISOString() })
    .where('code_hash', '=', codeHash)
    .execute();
}

/**
 * Forgets at most `limit` codes that expired before `cutoff`, oldest first (a replay of one is then
 * refused as unknown); returns how many.
 */
export async function deleteAuthorizationCodesBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'authorization_code', cutoff, limit);
}
