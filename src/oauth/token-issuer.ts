import { randomUUID } from 'node:crypto';
import { type Clock, onceAnHour } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
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
  // Every rotation adds a row: the expired ones are deleted once an hour per node.
  const pruneDue = onceAnHour();

  /**
   * Tokens for a new login, whose user was read at `sessionGeneration`. Throws `invalid_grant` when
   * every login of the user was ended meanwhile (CONTRACT §14: a change to the second factors while
   * this login was being judged): the login was decided on what no longer holds.
   */
  async function startLogin(grant: AccessGrant, sessionGeneration: number): Promise<TokenResponse> {
    if (pruneDue(clock.now())) await store.refreshTokens.deleteExpiredRefreshTokens(clock.now());
    return issue(grant, grant.scope, (token, now) =>
      store.refreshTokens.startRefreshFamily(token, now, sessionGeneration),
    );
  }

  /**
   * Tokens for a login that goes on (a refresh), in its family. The access token may carry less
   * than `loginScope`; the new refresh token keeps all of it (RFC 6749 §6).
   */
  async function continueLogin(grant: AccessGrant, loginScope: string): Promise<TokenResponse> {
    return issue(grant, loginScope, async (token, now) => {
      await store.refreshTokens.insertRefreshToken(token, now);
      return true;
    });
  }

  /**
   * `grant.sessionId` names the refresh-token family (new per login, kept by rotation). The refresh
   * token expires REFRESH_TOKEN_TTL after the login (CONTRACT §14), not after this refresh:
   * rotation does not make a login last for ever.
   */
  async function issue(
    grant: AccessGrant,
    refreshScope: string,
    storeRefreshToken: (token: RefreshToken, now: Date) => Promise<boolean>,
  ): Promise<TokenResponse> {
    const now = clock.now();
    const access = await accessTokens.issueAccessToken(grant);
    const refreshToken = randomToken(32);
    const stored = await storeRefreshToken(
      {
        id: randomUUID(),
        tokenHash: sha256(refreshToken),
        familyId: grant.sessionId,
        userId: grant.userId,
        clientId: grant.clientId,
        scope: refreshScope,
        amr: grant.amr,
        authTime: grant.authTime,
        expiresAt: new Date(grant.authTime * 1000 + refreshTtlSeconds * 1000),
      },
      now,
    );
    if (!stored) {
      throw new ServiceError('invalid_grant', "the user's second factors changed during this login; log in again");
    }
    return { accessToken: access.token, expiresInSeconds: access.expiresInSeconds, scope: grant.scope, refreshToken };
  }

  return { startLogin, continueLogin };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
