import type { Executor } from './database.js';

export type MfaChallengeStyle = 'seed' | 'error';

export interface OAuthClient {
  id: string;
  name: string;
  secretHash: string;
  mfaChallenge: MfaChallengeStyle;
}

export async function insertClient(db: Executor, client: OAuthClient, now: Date): Promise<void> {
  await db
    .insertInto('oauth_client')
    .values({
      id: client.id,
      name: client.name,
      secret_hash: client.secretHash,
      mfa_challenge: client.mfaChallenge,
      created_at: now.toISOString(),
    })
    .execute();
}

/** The client with this id, or undefined. */
export async function findClient(db: Executor, id: string): Promise<OAuthClient | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (id.includes('\0')) return undefined;
  const row = await db
    .selectFrom('oauth_client')
    .select(['id', 'name', 'secret_hash', 'mfa_challenge'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row && { id: row.id, name: row.name, secretHash: row.secret_hash, mfaChallenge: row.mfa_challenge };
}

/** Sets how the client is told a second factor is needed; false when there is no such client. */
export async function setMfaChallenge(db: Executor, id: string, style: MfaChallengeStyle): Promise<boolean> {
  if (id.includes('\0')) return false;
  const row = await db
    .updateTable('oauth_client')
    .set({ mfa_challenge: style })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}
