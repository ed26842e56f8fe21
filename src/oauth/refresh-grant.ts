import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../logins/sessions.js';
import type { Store } from '../store/store.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

export interface RefreshGrantDeps {
  store: Store;
  tokens: TokenIssuer;
  sessions: Sessions;
  audit: AuditTrail;
  clock: Clock;
}

/** RFC 6749 §6 refresh with rotation (RFC 9700 §4.14): each refresh token works once. */
export function createRefreshGrant({ store, tokens, sessions, audit, clock }: RefreshGrantDeps) {
  /**
   * New tokens for the refresh token's login, keeping its amr and auth_time; the old token is spent.
   * Throws `invalid_grant` for an unknown, expired, revoked or other client's token; a spent token
   * presented again revokes its whole family (the login) before answering `invalid_grant`.
   */
  async function grantWithRefreshToken(
    request: { clientId: string; refreshToken: string; scope?: string },
    context: RequestContext,
  ): Promise<TokenResponse> {
    const now = clock.now();
    const stored = await store.refreshTokens.findRefreshToken(sha256(request.refreshToken));
    if (!stored || stored.clientId !== request.clientId) {
      throw new ServiceError('invalid_grant', 'the refresh token is invalid');
    }
    if (stored.revokedAt) throw new ServiceError('invalid_grant', 'the refresh token has been revoked');
    if (stored.expiresAt <= now) throw new ServiceError('invalid_grant', 'the refresh token has expired');
    const scope = narrowScope(stored.scope, request.scope);
    const reuse = async () => {
      await store.transaction(async (tx) => {
        await sessions.endSession(tx, stored, now);
        await audit.record('refresh_token_reuse', 'login_revoked', { userId: stored.userId, context }, tx);
      });
      return new ServiceError('invalid_grant', 'the refresh token was already used; the login is revoked');
    };
    if (stored.usedAt) throw await reuse();
    // The new tokens are stored before the old one is spent, so that whoever revokes the login
    // after seeing it spent (a reuse racing this refresh, or RFC 7009 revocation) revokes them too.
    // Spent first, a revocation could run between the spend and the insert and miss them.
    const issued = await tokens.continueLogin(
      {
        userId: stored.userId,
        clientId: stored.clientId,
        scope,
        amr: stored.amr,
        acr: stored.acr,
        authTime: stored.authTime,
        sessionId: stored.familyId,
      },
      stored.scope,
      stored.id,
    );
    // Revoked meanwhile (a change to the user's factors, RFC 7009): the login is over, no alarm.
    if (!issued && (await store.refreshTokens.findRefreshToken(stored.tokenHash))?.revokedAt) {
      throw new ServiceError('invalid_grant', 'the refresh token has been revoked; log in again');
    }
    // The conditional update settles races: of several requests with one token, one spends it.
    if (!issued || !(await store.refreshTokens.spendRefreshToken(stored.id, now))) throw await reuse();
    return issued;
  }

  /** Revokes every refresh token of the login and refuses its access tokens from now on. */
  async function revokeLogin(login: { userId: string; familyId: string }, now: Date = clock.now()): Promise<void> {
    await store.transaction((tx) => sessions.endSession(tx, login, now));
  }

  return { grantWithRefreshToken, revokeLogin };
}

/** RFC 6749 §6: a refresh may ask for less scope than the login had, never more. */
function narrowScope(granted: string, requested: string | undefined): string {
  if (requested === undefined || requested === '') return granted;
  const allowed = new Set(granted.split(' '));
  if (!requested.split(' ').every((token) => allowed.has(token))) {
    throw new ServiceError('invalid_scope', 'the requested scope exceeds the scope of the login');
  }
  return requested;
}

export type RefreshGrant = ReturnType<typeof createRefreshGrant>;
