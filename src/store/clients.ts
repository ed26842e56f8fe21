import type { Selectable } from 'kysely';
import type { Executor, OAuthClientTable } from './database.js';

export type MfaChallengeStyle = 'seed' | 'error';
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';
export type MfaPolicy = 'optional' | 'required';

/** What a client registers for the browser flow (CONTRACT §18), beside its name. */
export interface ClientMetadata {
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  allowedScopes: string[];
  webOrigins: string[];
  idTokenSignedResponseAlg: string;
  mfaPolicy: MfaPolicy;
  /** Days a browser may skip the second step after the person chose so; 0: never (CONTRACT §19). */
  rememberDeviceDays: number;
}

export interface OAuthClient extends ClientMetadata {
  id: string;
  name: string;
  /** SHA-256 of the secret; '' for a public client, which has none. */
  secretHash: string;
  mfaChallenge: MfaChallengeStyle;
}

const COLUMNS = [
  'id',
  'name',
  'secret_hash',
  'mfa_challenge',
  'redirect_uris',
  'post_logout_redirect_uris',
  'token_endpoint_auth_method',
  'allowed_scopes',
  'web_origins',
  'id_token_signed_response_alg',
  'mfa_policy',
  'remember_device_days',
] as const;

type ClientRow = Pick<Selectable<OAuthClientTable>, (typeof COLUMNS)[number]>;

function toClient(row: ClientRow): OAuthClient {
  return {
    id: row.id,
    name: row.name,
    secretHash: row.secret_hash,
    mfaChallenge: row.mfa_challenge,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    tokenEndpointAuthMethod: row.token_endpoint_auth_method as TokenEndpointAuthMethod,
    allowedScopes: row.allowed_scopes.split(' ').filter(Boolean),
    webOrigins: JSON.parse(row.web_origins) as string[],
    idTokenSignedResponseAlg: row.id_token_signed_response_alg,
    mfaPolicy: row.mfa_policy as MfaPolicy,
    rememberDeviceDays: row.remember_device_days,
  };
}

function metadataColumns(metadata: Partial<ClientMetadata>) {
  return {
    ...(metadata.redirectUris && { redirect_uris: JSON.stringify(metadata.redirectUris) }),
    ...(metadata.postLogoutRedirectUris && {
      post_logout_redirect_uris: JSON.stringify(metadata.postLogoutRedirectUris),
    }),
    ...(metadata.tokenEndpointAuthMethod && { token_endpoint_auth_method: metadata.tokenEndpointAuthMethod }),
    ...(metadata.allowedScopes && { allowed_scopes: metadata.allowedScopes.join(' ') }),
    ...(metadata.webOrigins && { web_origins: JSON.stringify(metadata.webOrigins) }),
    ...(metadata.idTokenSignedResponseAlg && { id_token_signed_response_alg: metadata.idTokenSignedResponseAlg }),
    ...(metadata.mfaPolicy && { mfa_policy: metadata.mfaPolicy }),
    ...(metadata.rememberDeviceDays !== undefined && { remember_device_days: metadata.rememberDeviceDays }),
  };
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
      ...metadataColumns(client),
    })
    .execute();
}

/** Inserts the client, or gives the one with its id these settings (a built-in client, at every start). */
export async function putClient(db: Executor, client: OAuthClient, now: Date): Promise<void> {
  const settings = {
    name: client.name,
    secret_hash: client.secretHash,
    mfa_challenge: client.mfaChallenge,
    ...metadataColumns(client),
  };
  await db
    .insertInto('oauth_client')
    .values({ id: client.id, created_at: now.toISOString(), ...settings })
    // Nodes starting together: the database settles which insert wins; the others update to the same.
    .onConflict((conflict) => conflict.column('id').doUpdateSet(settings))
    .execute();
}

/** The client with this id, or undefined. */
export async function findClient(db: Executor, id: string): Promise<OAuthClient | undefined> {
  // PostgreSQL text cannot hold NUL and refuses to compare with it; no row has one on either dialect.
  if (id.includes('\0')) return undefined;
  const row = await db.selectFrom('oauth_client').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toClient(row);
}

/** Every client, oldest first. */
export async function listClients(db: Executor): Promise<OAuthClient[]> {
  const rows = await db.selectFrom('oauth_client').select(COLUMNS).orderBy('created_at').orderBy('id').execute();
  return rows.map(toClient);
}

/**
 * Changes what is given of the client's settings (a new secret hash included); false when there
 * is no such client.
 */
export async function updateClient(
  db: Executor,
  id: string,
  changes: Partial<ClientMetadata> & { name?: string; mfaChallenge?: MfaChallengeStyle; secretHash?: string },
): Promise<boolean> {
  if (id.includes('\0')) return false;
  const row = await db
    .updateTable('oauth_client')
    .set({
      ...metadataColumns(changes),
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.mfaChallenge !== undefined && { mfa_challenge: changes.mfaChallenge }),
      ...(changes.secretHash !== undefined && { secret_hash: changes.secretHash }),
    })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Deletes the client (its codes and sign-ins in progress go with it); false when there was none. */
export async function deleteClient(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false;
  const row = await db.deleteFrom('oauth_client').where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}

/** Every origin some client lets call the browser-facing endpoints (CORS). */
export async function listWebOrigins(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('oauth_client').select('web_origins').where('web_origins', '<>', '[]').execute();
  return rows.flatMap((row) => JSON.parse(row.web_origins) as string[]);
}
