import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

/** The client_id recorded in tokens issued to callers that sent no client credentials. */
export const PUBLIC_CLIENT_ID = 'public';

/** OAuth clients: registration by the admin, authentication at the token endpoint. */
export function createClients({ store, clock }: { store: Store; clock: Clock }) {
  /** Registers a confidential client; its secret is returned this once and stored as a hash. */
  async function registerClient(name: string): Promise<{ clientId: string; clientSecret: string }> {
    const clientId = randomUUID();
    const clientSecret = randomToken(32);
    await store.clients.insertClient({ id: clientId, name, secretHash: sha256(clientSecret) }, clock.now());
    return { clientId, clientSecret };
  }

  /**
   * The authenticated client id, or PUBLIC_CLIENT_ID when no credentials were given (or only
   * `client_id=public`).
   * Throws `invalid_client` for an unknown client, a wrong secret, or an id without its secret.
   */
  async function authenticateClient(credentials?: { clientId: string; clientSecret?: string }): Promise<string> {
    if (!credentials) return PUBLIC_CLIENT_ID;
    // RFC 6749 §3.2.1: an unauthenticated client may still name itself (auth method "none").
    if (credentials.clientId === PUBLIC_CLIENT_ID && credentials.clientSecret === undefined) return PUBLIC_CLIENT_ID;
    const client = await store.clients.findClient(credentials.clientId);
    // Hash the presented secret even for an unknown client, so both answers cost the same.
    const presentedHash = sha256(credentials.clientSecret ?? '');
    const matches = safeEqual(client?.secretHash ?? '', presentedHash);
    if (!client || credentials.clientSecret === undefined || !matches) {
      throw new ServiceError('invalid_client', 'client authentication failed');
    }
    return client.id;
  }

  return { registerClient, authenticateClient };
}

export type Clients = ReturnType<typeof createClients>;
