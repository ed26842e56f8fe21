import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { ClientMetadata, MfaChallengeStyle, OAuthClient } from '../store/clients.js';
import type { Store } from '../store/store.js';
import { DEFAULT_ALLOWED_SCOPES, DEFAULT_METADATA } from './client-metadata.js';

/** The client_id recorded in tokens issued to callers that sent no client credentials. */
export const PUBLIC_CLIENT_ID = 'public';

/** The client a token request came from, once authenticated. */
export interface AuthenticatedClient {
  id: string;
  /**
   * How the client is told a second factor is needed: `seed` answers 200 `{mfa_required}`,
   * `error` answers 403 `mfa_required` with an `mfa_token` (CONTRACT §14).
   */
  mfaChallenge: MfaChallengeStyle;
  /** The scopes it may be granted (CONTRACT §18): a request for others is `invalid_scope`. */
  allowedScopes: readonly string[];
  /** What its ID tokens are signed with. */
  idTokenSignedResponseAlg: string;
}

/** The seed's caller without credentials: the password grant, and the default scopes only. */
const PUBLIC_CLIENT: AuthenticatedClient = {
  id: PUBLIC_CLIENT_ID,
  mfaChallenge: 'seed',
  allowedScopes: DEFAULT_ALLOWED_SCOPES,
  idTokenSignedResponseAlg: DEFAULT_METADATA.idTokenSignedResponseAlg,
};

/** A client as the admin API shows it: everything but the secret. */
export type ClientSettings = Omit<OAuthClient, 'secretHash'>;

/** OAuth clients: registration by the admin, authentication at the token endpoint. */
export function createClients({ store, clock }: { store: Store; clock: Clock }) {
  /**
   * Registers a client; its secret (none for `token_endpoint_auth_method: none`) is returned this
   * once and stored as a hash.
   */
  async function registerClient(
    name: string,
    settings: { mfaChallenge?: MfaChallengeStyle } & Partial<ClientMetadata> = {},
  ): Promise<{ settings: ClientSettings; clientSecret?: string }> {
    const { mfaChallenge = 'seed', ...metadata } = settings;
    const client: OAuthClient = {
      id: randomUUID(),
      name,
      secretHash: '',
      mfaChallenge,
      ...DEFAULT_METADATA,
      ...metadata,
    };
    const clientSecret = client.tokenEndpointAuthMethod === 'none' ? undefined : randomToken(32);
    if (clientSecret) client.secretHash = sha256(clientSecret);
    await store.clients.insertClient(client, clock.now());
    return { settings: withoutSecret(client), clientSecret };
  }

  /** The client's settings; throws 404 `not_found`. */
  async function getClient(clientId: string): Promise<ClientSettings> {
    return withoutSecret(await findOrThrow(clientId));
  }

  /** Every client, oldest first. */
  async function listClients(): Promise<ClientSettings[]> {
    return (await store.clients.listClients()).map(withoutSecret);
  }

  /**
   * Changes the given settings; throws 404 `not_found`. Making a client public drops its secret;
   * making a public client confidential needs a new secret, returned this once.
   */
  async function updateClient(
    clientId: string,
    changes: { name?: string; mfaChallenge?: MfaChallengeStyle } & Partial<ClientMetadata>,
  ): Promise<{ settings: ClientSettings; clientSecret?: string }> {
    const before = await findOrThrow(clientId);
    const method = changes.tokenEndpointAuthMethod ?? before.tokenEndpointAuthMethod;
    let clientSecret: string | undefined;
    let secretHash: string | undefined;
    if (method === 'none') secretHash = '';
    else if (before.tokenEndpointAuthMethod === 'none') {
      clientSecret = randomToken(32);
      secretHash = sha256(clientSecret);
    }
    if (!(await store.clients.updateClient(clientId, { ...changes, secretHash }))) throw notFound();
    return { settings: await getClient(clientId), clientSecret };
  }

  /** Gives a confidential client a new secret, returned this once; the old one stops working. */
  async function rotateSecret(clientId: string): Promise<string> {
    const client = await findOrThrow(clientId);
    if (client.tokenEndpointAuthMethod === 'none') {
      throw new ServiceError(
        'invalid_request',
        'this client is public (token_endpoint_auth_method none): it has no secret',
      );
    }
    const clientSecret = randomToken(32);
    if (!(await store.clients.updateClient(clientId, { secretHash: sha256(clientSecret) }))) throw notFound();
    return clientSecret;
  }

  /** Deletes the client; its refresh tokens stop working with it. Throws 404 `not_found`. */
  async function deleteClient(clientId: string): Promise<void> {
    const now = clock.now();
    await store.transaction(async (tx) => {
      if (!(await tx.clients.deleteClient(clientId))) throw notFound();
      await tx.refreshTokens.revokeClientTokens(clientId, now);
    });
  }

  /** A registered client by id (for the browser flow), or undefined. */
  function findClient(clientId: string): Promise<OAuthClient | undefined> {
    return store.clients.findClient(clientId);
  }

  /**
   * The authenticated client, or the seed's public client when no credentials were given (or only
   * `client_id=public`). A registered public client (`none`) names itself with `client_id` alone.
   * Throws `invalid_client` for an unknown client, a wrong secret, a confidential client without
   * its secret, or a public client with one.
   */
  async function authenticateClient(credentials?: {
    clientId: string;
    clientSecret?: string;
  }): Promise<AuthenticatedClient> {
    if (!credentials) return PUBLIC_CLIENT;
    // RFC 6749 §3.2.1: an unauthenticated client may still name itself (auth method "none").
    if (credentials.clientId === PUBLIC_CLIENT_ID && credentials.clientSecret === undefined) return PUBLIC_CLIENT;
    const client = await store.clients.findClient(credentials.clientId);
    if (client?.tokenEndpointAuthMethod === 'none') {
      if (credentials.clientSecret !== undefined) {
        throw new ServiceError('invalid_client', 'this client is public: send client_id alone, without a secret');
      }
      return authenticated(client);
    }
    // Hash the presented secret even for an unknown client, so both answers cost the same.
    const presentedHash = sha256(credentials.clientSecret ?? '');
    const matches = safeEqual(client?.secretHash || 'none', presentedHash);
    if (!client || credentials.clientSecret === undefined || !matches) {
      throw new ServiceError('invalid_client', 'client authentication failed');
    }
    return authenticated(client);
  }

  async function findOrThrow(clientId: string): Promise<OAuthClient> {
    const client = await store.clients.findClient(clientId);
    if (!client) throw notFound();
    return client;
  }

  return {
    registerClient,
    getClient,
    listClients,
    updateClient,
    rotateSecret,
    deleteClient,
    findClient,
    authenticateClient,
  };
}

export type Clients = ReturnType<typeof createClients>;

function authenticated(client: OAuthClient): AuthenticatedClient {
  return {
    id: client.id,
    mfaChallenge: client.mfaChallenge,
    allowedScopes: client.allowedScopes,
    idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
  };
}

function withoutSecret({ secretHash: _secret, ...settings }: OAuthClient): ClientSettings {
  return settings;
}

function notFound(): ServiceError {
  return new ServiceError('not_found', 'no client has this id');
}

/** Throws 400 `invalid_scope` unless every scope in `scope` is one the client may be granted. */
export function requireAllowedScope(client: { allowedScopes: readonly string[] }, scope: string): void {
  const refused = scope.split(' ').filter((token) => token && !client.allowedScopes.includes(token));
  if (refused.length > 0) {
    throw new ServiceError(
      'invalid_scope',
      `this client may not be granted ${refused.join(' ')}; it may ask for: ${client.allowedScopes.join(' ') || 'no scope'}`,
    );
  }
}
