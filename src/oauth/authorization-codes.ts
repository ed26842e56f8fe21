import { createHash, randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../logins/sessions.js';
import type { Acr } from '../logins/step-up.js';
import type { Store } from '../store/store.js';
import type { AuthorizationRequest } from './authorize/checks.js';
import type { AuthenticatedClient } from './clients.js';
import type { IdTokens } from './id-tokens.js';
import type { IdTokenAlg } from './signing-keys.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

/** CONTRACT §18: a code lives at most 60 s. */
const CODE_TTL_MS = 60_000;
/** Codes are kept this long past their end, so that a late replay is still seen as one. */
const KEEP_EXPIRED_MS = 10 * 60_000;

/**
 * The retention worker's clean-up of codes: at most `limit` of those that ended longer than 10
 * minutes ago, oldest first; returns how many.
 */
export function deleteForgottenAuthorizationCodes(store: Store, now: Date, limit: number): Promise<number> {
  return store.authorizationCodes.deleteAuthorizationCodesBefore(new Date(now.getTime() - KEEP_EXPIRED_MS), limit);
}
// RFC 7636 §4.1: 43 to 128 unreserved characters.
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** What a finished sign-in proved, for the code and the tokens it gives. */
export interface SignInProof {
  userId: string;
  amr: string[];
  /** What the sign-in reached: what its amr reaches, but aal2 for a remembered device (CONTRACT §19). */
  acr: Acr;
  authTime: number;
  /** The user's session generation the sign-in was judged on (CONTRACT §14). */
  sessionGeneration: number;
}

export interface CodeGrantRequest {
  client: AuthenticatedClient;
  code: string;
  redirectUri?: string;
  codeVerifier?: string;
}

/** The authorization code grant's answer: the token response, and an ID token when `openid` was granted. */
export type CodeGrantResult = TokenResponse & { idToken?: string };

/** RFC 6749 §4.1 authorization codes: made when a sign-in finishes, exchanged once at the token endpoint. */
export function createAuthorizationCodes({
  store,
  tokens,
  idTokens,
  sessions,
  audit,
  clock,
}: {
  store: Store;
  tokens: TokenIssuer;
  idTokens: IdTokens;
  sessions: Sessions;
  audit: AuditTrail;
  clock: Clock;
}) {
  /** A new code for the request's client and redirect URI, standing for the sign-in; stored hashed. */
  async function issueCode(
    request: AuthorizationRequest,
    proof: SignInProof,
    signInSessionId: string,
  ): Promise<string> {
    const now = clock.now();
    const code = randomToken(32);
    await store.authorizationCodes.insertAuthorizationCode(
      {
        codeHash: sha256(code),
        clientId: request.clientId,
        userId: proof.userId,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        scope: request.scope,
        nonce: request.nonce,
        amr: proof.amr,
        acr: proof.acr,
        authTime: proof.authTime,
        signInSessionId,
        loginId: randomUUID(),
        sessionGeneration: proof.sessionGeneration,
        expiresAt: new Date(now.getTime() + CODE_TTL_MS),
      },
      now,
    );
    return code;
  }

  /**
   * RFC 6749 §4.1.3: the code's tokens, once. Throws `invalid_grant` for an unknown, expired or
   * other client's code, another redirect URI, or a wrong code_verifier (none of which spends it);
   * a code used before is refused and the tokens its first use gave are revoked (§4.1.2).
   */
  async function grantWithAuthorizationCode(
    request: CodeGrantRequest,
    context: RequestContext,
  ): Promise<CodeGrantResult> {
    if (request.redirectUri === undefined || request.codeVerifier === undefined) {
      throw new ServiceError(
        'invalid_request',
        'the authorization_code grant needs code, redirect_uri and code_verifier',
      );
    }
    if (!CODE_VERIFIER.test(request.codeVerifier)) {
      throw new ServiceError(
        'invalid_request',
        'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)',
      );
    }
    const now = clock.now();
    const codeHash = sha256(request.code);
    const code = await store.authorizationCodes.findAuthorizationCode(codeHash);
    if (!code || code.clientId !== request.client.id) {
      throw new ServiceError('invalid_grant', 'the code is unknown or was issued to another client; sign in again');
    }
    if (code.usedAt) throw await replayed(code, context);
    if (code.expiresAt <= now)
      throw new ServiceError('invalid_grant', 'the code has expired (codes live 60 s); sign in again');
    if (request.redirectUri !== code.redirectUri) {
      throw new ServiceError('invalid_grant', 'redirect_uri is not the one the code was issued for');
    }
    const challenge = createHash('sha256').update(request.codeVerifier).digest('base64url');
    if (!safeEqual(challenge, code.codeChallenge)) {
      throw new ServiceError(
        'invalid_grant',
        'code_verifier does not match the code_challenge of the authorization request',
      );
    }
    // The tokens are stored before the code is spent, as the refresh grant does, so that whoever
    // finds the code spent (a racing exchange, a replay) revokes them: spent first, the racing
    // exchanges' revocation could run between the spend and the insert, and the one exchange that
    // spent the code would then be refused too. Every exchange stores into the code's one login.
    const issued = await tokens.startLogin(
      {
        userId: code.userId,
        clientId: code.clientId,
        scope: code.scope,
        amr: code.amr,
        acr: code.acr,
        authTime: code.authTime,
        sessionId: code.loginId,
      },
      code.sessionGeneration,
      { signInSessionId: code.signInSessionId, authorizationCodeHash: codeHash },
    );
    if (!issued) {
      throw new ServiceError(
        'invalid_grant',
        "the user's sign-ins were ended since this code was issued (their second factors changed), or the code was replayed; sign in again",
      );
    }
    // The conditional update settles races: of two exchanges of one code, one spends it.
    if (!(await store.authorizationCodes.spendAuthorizationCode(codeHash, now))) throw await replayed(code, context);
    if (!code.scope.split(' ').includes('openid')) return issued;
    const idToken = await idTokens.issueIdToken(
      {
        userId: code.userId,
        clientId: code.clientId,
        authTime: code.authTime,
        amr: code.amr,
        acr: code.acr,
        nonce: code.nonce,
        signInSessionId: code.signInSessionId,
      },
      request.client.idTokenSignedResponseAlg as IdTokenAlg,
    );
    return { ...issued, idToken };
  }

  /**
   * A code presented again: RFC 6749 §4.1.2's answer to a stolen code. The first use can no
   * longer store tokens, and those it stored are revoked, access tokens too.
   */
  async function replayed(code: { codeHash: string; userId: string; loginId: string }, context: RequestContext) {
    const now = clock.now();
    await store.transaction(async (tx) => {
      // The user's row first, then the code's: the order in which an exchange storing its tokens
      // locks them (startRefreshFamily), so that the two never wait for each other (a deadlock on
      // PostgreSQL when exchanges of one code race).
      await tx.factors.lockUserMfa(code.userId);
      await tx.authorizationCodes.markAuthorizationCodeReplayed(code.codeHash, now);
      await sessions.endSession(tx, { userId: code.userId, familyId: code.loginId }, now);
      await audit.record('authorization_code_replayed', 'login_revoked', { userId: code.userId, context }, tx);
    });
    return new ServiceError('invalid_grant', 'the code was already used; the tokens it gave are revoked');
  }

  return { issueCode, grantWithAuthorizationCode };
}

export type AuthorizationCodes = ReturnType<typeof createAuthorizationCodes>;
