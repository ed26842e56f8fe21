import { verify as cryptoVerify, KeyObject, randomUUID, type webcrypto } from 'node:crypto';
import { errors, jwtVerify } from 'jose';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import { ACR_VALUES, type Acr } from '../logins/step-up.js';
import type { Factor } from '../store/mfa-factors.js';
import type { Store } from '../store/store.js';
import { SIGNING_ALG, type SigningKeys, signJwt } from './signing-keys.js';

/** The login an access token stands for. */
export interface AccessGrant {
  userId: string;
  clientId: string;
  scope: string;
  /** RFC 8176 methods: ["pwd"], or ["pwd","sms"] when a second factor was given. */
  amr: string[];
  /** What the login reached (CONTRACT §14): usually what its amr reaches; aal2 for a remembered device. */
  acr: Acr;
  /** When the login happened, seconds since the epoch (kept across refreshes). */
  authTime: number;
  /** The login's id (its refresh-token family), so revoking the login refuses its access tokens. */
  sessionId: string;
}

export interface VerifiedAccessToken extends AccessGrant {
  jti: string;
  issuedAt: number;
  expiresAt: number;
}

/** Verified tokens remembered at most; past it the memory is started afresh. */
const VERIFIED_CACHE_SIZE = 10_000;

export interface AccessTokenDeps {
  store: Store;
  keys: SigningKeys;
  clock: Clock;
  issuer: string;
  ttlSeconds: number;
}

/** RFC 9068 JWT access tokens signed with the active key. */
export function createAccessTokens({ store, keys, clock, issuer, ttlSeconds }: AccessTokenDeps) {
  const verified = new Map<string, VerifiedAccessToken>();

  async function issueAccessToken(grant: AccessGrant): Promise<{ token: string; expiresInSeconds: number }> {
    const issuedAt = Math.floor(clock.now().getTime() / 1000);
    const token = signJwt(await keys.activeKey(), 'at+jwt', {
      iss: issuer,
      aud: issuer,
      sub: grant.userId,
      jti: randomUUID(),
      iat: issuedAt,
      exp: issuedAt + ttlSeconds,
      client_id: grant.clientId,
      scope: grant.scope,
      amr: grant.amr,
      acr: grant.acr,
      auth_time: grant.authTime,
      sid: grant.sessionId,
    });
    return { token, expiresInSeconds: ttlSeconds };
  }

  /**
   * The token's grant; throws `invalid_token` for anything forged, altered, expired, malformed or
   * revoked, and for the token of a user who no longer exists.
   */
  async function verifyAccessToken(token: string): Promise<VerifiedAccessToken> {
    const verified = await verifySignedToken(token);
    refuseUnlessStanding(
      await store.revokedTokens.findTokenStanding(verified.userId, [verified.jti, verified.sessionId]),
    );
    return verified;
  }

  /**
   * `verifyAccessToken`, with the user's factors (pending ones included) read in the same round
   * trip: `GET /mfa/`, the hottest call, needs nothing else (docs/PERFORMANCE.md).
   */
  async function verifyAccessTokenWithFactors(
    token: string,
  ): Promise<{ grant: VerifiedAccessToken; factors: Factor[] }> {
    const grant = await verifySignedToken(token);
    const { factors, ...standing } = await store.tokenStanding.findStandingWithFactors(
      grant.userId,
      grant.jti,
      grant.sessionId,
    );
    refuseUnlessStanding(standing);
    return { grant, factors };
  }

  /**
   * Checks signature and claims only (not revocation); throws `invalid_token`. A token that
   * verified once is remembered until it expires: the signature cannot change, so checking it
   * again on every request is work without information.
   */
  async function verifySignedToken(token: string): Promise<VerifiedAccessToken> {
    const nowSeconds = clock.now().getTime() / 1000;
    const known = verified.get(token);
    if (known && known.expiresAt > nowSeconds) return known;
    const claims = await verifySignature(token);
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.clear();
    verified.set(token, claims);
    return claims;
  }

  async function verifySignature(token: string): Promise<VerifiedAccessToken> {
    // Most forgeries end here, without an Error made (and its stack captured) only to be replaced.
    if (!isCanonicalCompactJws(token) || !(await hasValidSignature(token))) {
      throw new ServiceError('invalid_token', NOT_ISSUED_HERE);
    }
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = header.kid === undefined ? undefined : await keys.findVerificationKey(header.kid);
          if (!key) throw new Error('unknown signing key');
          return key;
        },
        {
          issuer,
          audience: issuer,
          typ: 'at+jwt',
          algorithms: [SIGNING_ALG],
          currentDate: clock.now(),
          requiredClaims: ['sub', 'jti', 'iat', 'exp', 'client_id', 'amr', 'acr', 'auth_time', 'sid'],
        },
      );
      const { sub, jti, iat, exp, client_id, scope, amr, acr, auth_time, sid } = payload;
      if (
        typeof sub !== 'string' ||
        typeof jti !== 'string' ||
        typeof sid !== 'string' ||
        typeof iat !== 'number' ||
        typeof exp !== 'number' ||
        typeof client_id !== 'string' ||
        typeof scope !== 'string' ||
        typeof auth_time !== 'number' ||
        !Array.isArray(amr) ||
        !amr.every((method) => typeof method === 'string') ||
        !ACR_VALUES.includes(acr as Acr)
      ) {
        throw new Error('claims of the wrong type');
      }
      return {
        userId: sub,
        clientId: client_id,
        scope,
        amr,
        acr: acr as Acr,
        authTime: auth_time,
        sessionId: sid,
        jti,
        issuedAt: iat,
        expiresAt: exp,
      };
    } catch (error) {
      // jose checks the signature before the claims: only a token this service signed is "expired".
      if (error instanceof errors.JWTExpired) {
        throw new ServiceError('invalid_token', 'the access token has expired; refresh it or log in again');
      }
      throw new ServiceError('invalid_token', NOT_ISSUED_HERE);
    }
  }

  /**
   * The signature alone, checked synchronously with node:crypto before jose checks the whole token
   * (signature again, header and claims) through WebCrypto. A forged token, which fails here, costs
   * one Ed25519 verification and no WebCrypto round trip through the thread pool, about half of
   * what jose takes to refuse it (docs/PERFORMANCE.md); a genuine one pays both once, and is then
   * remembered. Only refuses: whatever passes still goes through jose.
   */
  async function hasValidSignature(token: string): Promise<boolean> {
    const [header = '', payload = '', signature = ''] = token.split('.');
    let kid: unknown;
    try {
      const fields = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
      if (fields?.alg !== SIGNING_ALG) return false;
      kid = fields.kid;
    } catch {
      return false;
    }
    const key = typeof kid === 'string' ? await keys.findVerificationKey(kid) : undefined;
    if (!key) return false;
    return cryptoVerify(
      null,
      Buffer.from(`${header}.${payload}`),
      keyObjectOf(key),
      Buffer.from(signature, 'base64url'),
    );
  }

  return { issueAccessToken, verifyAccessToken, verifyAccessTokenWithFactors, verifySignedToken };
}

const NOT_ISSUED_HERE = 'the access token is not valid: send one issued by this service';

const keyObjects = new WeakMap<object, KeyObject>();

/** The node:crypto form of a verification key (jose's keys are WebCrypto CryptoKeys), made once per key. */
function keyObjectOf(key: webcrypto.CryptoKey | KeyObject | Uint8Array): KeyObject {
  if (key instanceof KeyObject) return key;
  if (key instanceof Uint8Array) throw new Error('a symmetric key cannot verify EdDSA');
  let keyObject = keyObjects.get(key);
  if (!keyObject) {
    keyObject = KeyObject.from(key);
    keyObjects.set(key, keyObject);
  }
  return keyObject;
}

/** Throws `invalid_token` for a revoked token or login, and for the token of a user who no longer exists. */
function refuseUnlessStanding(standing: { userExists: boolean; isRevoked: boolean }): void {
  if (standing.isRevoked) throw new ServiceError('invalid_token', 'the access token has been revoked; log in again');
  if (!standing.userExists) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
}

/**
 * RFC 7515 §7.1: three base64url segments without padding. The decoder jose uses also takes `==`
 * padding and ignores the spare low bits of a segment's last character, so without this check one
 * signature has many spellings and an altered token string still verifies.
 */
function isCanonicalCompactJws(token: string): boolean {
  const segments = token.split('.');
  return (
    segments.length === 3 &&
    segments.every(
      (segment) =>
        /^[A-Za-z0-9_-]+$/.test(segment) && Buffer.from(segment, 'base64url').toString('base64url') === segment,
    )
  );
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
