import type { Clock } from '../clock.js';
import { sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { AccessTokens } from './access-tokens.js';
import type { RefreshGrant } from './refresh-grant.js';

export interface RevocationDeps {
  store: Store;
  accessTokens: AccessTokens;
  refreshGrant: RefreshGrant;
  clock: Clock;
}

/** RFC 7009 token revocation. */
export function createRevocation({ store, accessTokens, refreshGrant, clock }: RevocationDeps) {
  /**
   * Revokes the token if it was issued to `clientId` (a refresh token takes its whole login with
   * it; an access token is refused by its jti). Anything else is silently left alone (§2.2: unknown
   * tokens get 200 too, so callers learn nothing about tokens not theirs).
   */
  async function revokeToken(clientId: string, token: string): Promise<void> {
    const refresh = await store.refreshTokens.findRefreshToken(sha256(token));
    if (refresh) {
      if (refresh.clientId === clientId) await refreshGrant.revokeLogin(refresh);
      return;
    }
    const access = await accessTokens.verifySignedToken(token).catch((error: unknown) => {
      if (error instanceof ServiceError) return undefined;
      throw error;
    });
    if (access && access.clientId === clientId) {
      await store.revokedTokens.insertRevokedToken(access.jti, new Date(access.expiresAt * 1000));
    }
    await store.revokedTokens.pruneRevokedTokens(clock.now());
  }

  return { revokeToken };
}

export type Revocation = ReturnType<typeof createRevocation>;
