import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import type { RefreshToken } from '../store/refresh-tokens.js';
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
   * Tokens for a new login, whose user was read at `sessionGeneration`; undefined when every login
   * of the user was ended meanwhile (CONTRACT §14: a change to the second factors while this login
   * was being judged), for the login was decided on what no longer holds, or when the
   * authorization code it comes from was replayed meanwhile.
   */
  async function startLogin(
    grant: AccessGrant,
    sessionGeneration: number,
    origin: { signInSessionId?: string; authorizationCodeHash?: string } = {},
  ): Promise<TokenResponse | undefined> {
    const now = clock.now();
    const { refreshToken, response } = await mint(grant, grant.scope);
    refreshToken.signInSessionId = origin.signInSessionId;
    const stored = await store.refreshTokens.startRefreshFamily(
      refreshToken,
      now,
      sessionGeneration,
      origin.authorizationCodeHash,
    );
    return stored ? response : undefined;
  }

  /**
   * Tokens for a login that goes on (a refresh), in its family, replacing refresh token
   * `previousId`; undefined when that one was spent or revoked meanwhile. The access token may
   * carry less than `loginScope`; the new refresh token keeps all of it (RFC 6749 §6).
   */
  async function continueLogin(
    grant: AccessGrant,
    loginScope: string,
    previousId: string,
  ): Promise<TokenResponse | undefined> {
    const { refreshToken, response } = await mint(grant, loginScope);
    return (await store.refreshTokens.insertRotatedToken(refreshToken, clock.now(), previousId)) ? response : undefined;
  }

  /**
   * The signed access token and a new refresh token, not yet stored. `grant.sessionId` names the
   * refresh-token family (new per login, kept by rotation). The refresh token expires
   * REFRESH_TOKEN_TTL after the login (CONTRACT §14), not after this refresh: rotation does not
   * make a login last for ever.
   */
  async function mint(
    grant: AccessGrant,
    refreshScope: string,
  ): Promise<{ refreshToken: RefreshToken; response: TokenResponse }> {
    const access = await accessTokens.issueAccessToken(grant);
    const secret = randomToken(32);
    return {
      refreshToken: {
        id: randomUUID(),
        tokenHash: sha256(secret),
        familyId: grant.sessionId,
        userId: grant.userId,
        clientId: grant.clientId,
        scope: refreshScope,
        amr: grant.amr,
        acr: grant.acr,
        authTime: grant.authTime,
        expiresAt: new Date(grant.authTime * 1000 + refreshTtlSeconds * 1000),
      },
      response: {
        accessToken: access.token,
        expiresInSeconds: access.expiresInSeconds,
        scope: grant.scope,
        refreshToken: secret,
      },
    };
  }

  return { startLogin, continueLogin };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
