import type { Clock } from '../clock.js';
import { sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { AccessTokens } from './access-tokens.js';

/** RFC 7662 §2.2 answer, in wire names (it is a protocol document, not one of our records). */
export type Introspection =
  | { active: false }
  | {
      active: true;
      token_type: 'Bearer' | 'refresh_token';
      sub: string;
      client_id: string;
      scope: string;
      iat: number;
      exp: number;
      jti?: string;
      amr: string[];
      acr: string;
      auth_time: number;
      iss: string;
    };

export interface IntrospectionDeps {
  store: Store;
  accessTokens: AccessTokens;
  clock: Clock;
  issuer: string;
}

/** RFC 7662 token introspection, for any authenticated confidential client (resource servers). */
export function createIntrospection({ store, accessTokens, clock, issuer }: IntrospectionDeps) {
  /** What the token stands for while it is active; exactly `{active:false}` for anything else. */
  async function introspect(token: string): Promise<Introspection> {
    const refresh = await store.refreshTokens.findRefreshToken(sha256(token));
    if (refresh) {
      if (refresh.usedAt || refresh.revokedAt || refresh.expiresAt <= clock.now()) return { active: false };
      return {
        active: true,
        token_type: 'refresh_token',
        sub: refresh.userId,
        client_id: refresh.clientId,
        scope: refresh.scope,
        iat: Math.floor(refresh.createdAt.getTime() / 1000),
        exp: Math.floor(refresh.expiresAt.getTime() / 1000),
        // The contract's active answer names a jti for every token: a refresh token's is its row id.
        jti: refresh.id,
        amr: refresh.amr,
        acr: refresh.acr,
        auth_time: refresh.authTime,
        iss: issuer,
      };
    }
    try {
      const access = await accessTokens.verifyAccessToken(token);
      return {
        active: true,
        token_type: 'Bearer',
        sub: access.userId,
        client_id: access.clientId,
        scope: access.scope,
        iat: access.issuedAt,
        exp: access.expiresAt,
        jti: access.jti,
        amr: access.amr,
        acr: access.acr,
        auth_time: access.authTime,
        iss: issuer,
      };
    } catch (error) {
      if (error instanceof ServiceError) return { active: false };
      throw error;
    }
  }

  return { introspect };
}

export type TokenIntrospection = ReturnType<typeof createIntrospection>;
