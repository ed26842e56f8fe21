import { decodeProtectedHeader, jwtVerify } from 'jose';
import type { Clock } from '../clock.js';
import type { Acr } from '../logins/step-up.js';
import { ID_TOKEN_ALGS, type IdTokenAlg, type SigningKeys, signJwt } from './signing-keys.js';

/** What an ID token says of a sign-in (OpenID Connect Core §2). */
export interface IdTokenClaims {
  userId: string;
  clientId: string;
  authTime: number;
  amr: readonly string[];
  acr: Acr;
  nonce?: string;
  /** The browser sign-in session (the `sid` RP-initiated logout names). */
  signInSessionId: string;
}

/** ID tokens, signed with the algorithm each client registered (RS256 unless it said otherwise). */
export function createIdTokens({
  keys,
  clock,
  issuer,
  ttlSeconds,
}: {
  keys: SigningKeys;
  clock: Clock;
  issuer: string;
  ttlSeconds: number;
}) {
  async function issueIdToken(claims: IdTokenClaims, alg: IdTokenAlg): Promise<string> {
    const issuedAt = Math.floor(clock.now().getTime() / 1000);
    return signJwt(await keys.activeKey(alg), 'JWT', {
      iss: issuer,
      sub: claims.userId,
      aud: claims.clientId,
      iat: issuedAt,
      exp: issuedAt + ttlSeconds,
      auth_time: claims.authTime,
      ...(claims.nonce !== undefined && { nonce: claims.nonce }),
      acr: claims.acr,
      amr: [...claims.amr],
      sid: claims.signInSessionId,
    });
  }

  /**
   * An `id_token_hint` (RP-initiated logout): the client and session it names when it is an ID
   * token this service signed, expired or not (a hint outlives its token); undefined otherwise.
   */
  async function readIdTokenHint(
    token: string,
  ): Promise<{ clientId: string; userId: string; signInSessionId?: string } | undefined> {
    try {
      const { alg } = decodeProtectedHeader(token);
      if (!ID_TOKEN_ALGS.some((known) => known === alg)) return undefined;
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = header.kid === undefined ? undefined : await keys.findVerificationKey(header.kid);
          if (!key) throw new Error('unknown signing key');
          return key;
        },
        { issuer, typ: 'JWT', algorithms: [...ID_TOKEN_ALGS], currentDate: new Date(0) },
      );
      const audience = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
      if (typeof audience !== 'string' || typeof payload.sub !== 'string') return undefined;
      return {
        clientId: audience,
        userId: payload.sub,
        signInSessionId: typeof payload.sid === 'string' ? payload.sid : undefined,
      };
    } catch {
      return undefined;
    }
  }

  return { issueIdToken, readIdTokenHint };
}

export type IdTokens = ReturnType<typeof createIdTokens>;
