import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import type { Store } from '../store/store.js';
import type { AccessGrant, AccessTokens } from './access-tokens.js';

/** RFC 6749 §5.1 successful token response, in camelCase until it meets the wire. */
export interface TokenResponse {
  accessToken: string;
  expiresInSeconds: number;
  scope: string;
  refreshToken: string;
}

export interface TokenIssuerDeps {
  store: Store;
  accessTokens: AccessTokens;
  clock: Clock;
  refreshTtlSeconds: number;
}

/** Issues an access token and a refresh token (256 random bits, stored as its SHA-256) for a login. */
export function createTokenIssuer({ store, accessTokens, clock, refreshTtlSeconds }: TokenIssuerDeps) {
  /**
   * Tokens for a login; `grant.sessionId` names the refresh-token family (new per login, kept by
   * rotation). The refresh token expires REFRESH_TOKEN_TTL after the login (CONTRACT §14), not
   * after this refresh: rotation does not make a login last for ever.
   */
  async function issueTokens(grant: AccessGrant): Promise<TokenResponse> {
    const now = clock.now();
    const access = await accessTokens.issueAccessToken(grant);
    const refreshToken = randomToken(32);
    await store.refreshTokens.insertRefreshToken(
      {
        id: randomUUID(),
        tokenHash: sha256(refreshToken),
        familyId: grant.sessionId,
        userId: grant.userId,
        clientId: grant.clientId,
        scope: grant.scope,
        amr: grant.amr,
        authTime: grant.authTime,
        expiresAt: new Date(grant.authTime * 1000 + refreshTtlSeconds * 1000),
      },
      now,
    );
    return { accessToken: access.token, expiresInSeconds: access.expiresInSeconds, scope: grant.scope, refreshToken };
  }

  return { issueTokens };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
