import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { MfaChallengeStyle } from '../store/clients.js';
import type { Store } from '../store/store.js';

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
}

const PUBLIC_CLIENT: AuthenticatedClient = { id: PUBLIC_CLIENT_ID, mfaChallenge: 'seed' };

/** OAuth clients: registration by the admin, authentication at the token endpoint. */
export function createClients({ store, clock }: { store: Store; clock: Clock }) {
  /** Registers a confidential client; its secret is returned this once and stored as a hash. */
  async function registerClient(
    name: string,
    mfaChallenge: MfaChallengeStyle = 'seed',
  ): Promise<{ clientId: string; clientSecret: string }> {
    const clientId = randomUUID();
    const clientSecret = randomToken(32);
    await store.clients.insertClient(
      { id: clientId, name, secretHash: sha256(clientSecret), mfaChallenge },
      clock.now(),
    );
    return { clientId, clientSecret };
  }

  /** The client's public settings; throws 404 `not_found`. */
  async function getClient(
    clientId: string,
  ): Promise<{ clientId: string; name: string; mfaChallenge: MfaChallengeStyle }> {
    const client = await store.clients.findClient(clientId);
    if (!client) throw new ServiceError('not_found', 'no client has this id');
    return { clientId: client.id, name: client.name, mfaChallenge: client.mfaChallenge };
  }

  /** Changes how the client is told a second factor is needed; throws 404 `not_found`. */
  async function setMfaChallenge(clientId: string, style: MfaChallengeStyle) {
    if (!(await store.clients.setMfaChallenge(clientId, style))) {
      throw new ServiceError('not_found', 'no client has this id');
    }
    return getClient(clientId);
  }

  /**
   * The authenticated client, or the public client when no credentials were given (or only
   * `client_id=public`). Throws `invalid_client` for an unknown client, a wrong secret, or an id
   * without its secret.
   */
  async function authenticateClient(credentials?: {
    clientId: string;
    clientSecret?: string;
  }): Promise<AuthenticatedClient> {
    if (!credentials) return PUBLIC_CLIENT;
    // RFC 6749 §3.2.1: an unauthenticated client may still name itself (auth method "none").
    if (credentials.clientId === PUBLIC_CLIENT_ID && credentials.clientSecret === undefined) return PUBLIC_CLIENT;
    const client = await store.clients.findClient(credentials.clientId);
    // Hash the presented secret even for an unknown client, so both answers cost the same.
    const presentedHash = sha256(credentials.clientSecret ?? '');
    const matches = safeEqual(client?.secretHash ?? '', presentedHash);
    if (!client || credentials.clientSecret === undefined || !matches) {
      throw new ServiceError('invalid_client', 'client authentication failed');
    }
    return { id: client.id, mfaChallenge: client.mfaChallenge };
  }

  return { registerClient, getClient, setMfaChallenge, authenticateClient };
}

export type Clients = ReturnType<typeof createClients>;
