import type { Executor } from './database.js';

export interface OAuthClient {
  id: string;
  name: string;
  secretHash: string;
}

export async function insertClient(db: Executor, client: OAuthClient, now: Date): Promise<void> {
  await db
    .insertInto('oauth_client')
    .values({ id: client.id, name: client.name, secret_hash: client.secretHash, created_at: now.toISOString() })
    .execute();
}

/** The client with this id, or undefined. */
export async function findClient(db: Executor, id: string): Promise<OAuthClient | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (id.includes('\0')) return undefined;
  const row = await db
    .selectFrom('oauth_client')
    .select(['id', 'name', 'secret_hash'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row && { id: row.id, name: row.name, secretHash: row.secret_hash };
}
