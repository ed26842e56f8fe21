import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { verifyPassword } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import type { LoginChallenge, LoginDecision, SecondStep } from '../mfa/login-challenge.js';
import type { Store } from '../store/store.js';
import { foldUsername } from '../users/accounts.js';
import type { LoginThrottle } from './login-throttle.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

export interface PasswordGrantRequest extends SecondStep {
  clientId: string;
  username: string;
  password: string;
  scope: string;
}

export type PasswordGrantResult =
  | { tokens: TokenResponse; amr: string[]; factorType?: string }
  | { mfaRequired: true; challenge: Extract<LoginDecision, { challenge: unknown }>['challenge'] };

export interface PasswordGrantDeps {
  store: Store;
  loginChallenge: LoginChallenge;
  throttle: LoginThrottle;
  tokens: TokenIssuer;
  audit: AuditTrail;
  metrics: ServiceMetrics;
  clock: Clock;
}

const WRONG_CREDENTIALS = 'the username or password is wrong';

/** RFC 6749 §4.3 resource owner password grant, asking for a second factor when the user has one. */
export function createPasswordGrant({
  store,
  loginChallenge,
  throttle,
  tokens,
  audit,
  metrics,
  clock,
}: PasswordGrantDeps) {
  /**
   * Tokens, or `mfaRequired` with the challenge the user's factor asks for. Throws
   * `login_throttled` / `mfa_throttled` while too many attempts failed, `invalid_grant` for wrong
   * credentials or proofs. The password is checked before anything about MFA, so a wrong password
   * reveals neither the MFA state nor whether a code was right.
   */
  async function grantWithPassword(
    request: PasswordGrantRequest,
    context: RequestContext,
  ): Promise<PasswordGrantResult> {
    try {
      const result = await answer(request, context);
      if ('tokens' in result) metrics.loginAnswered('tokens', result.amr, result.factorType);
      else metrics.loginAnswered('mfa_required');
      return result;
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'invalid_grant') metrics.loginAnswered('invalid_grant');
      if (error instanceof ServiceError && (error.code === 'login_throttled' || error.code === 'mfa_throttled')) {
        metrics.loginAnswered('throttled');
      }
      throw error;
    }
  }

  async function answer(request: PasswordGrantRequest, context: RequestContext): Promise<PasswordGrantResult> {
    if (request.mfaCode !== undefined && request.backupCode !== undefined) {
      throw new ServiceError('invalid_request', 'send mfa_code or backup_code, not both');
    }
    // Counted before Argon2 runs, so that simultaneous guesses cannot all be judged; a wrong
    // password leaves the count, a right one gives it back.
    const attempt = await throttle.reserveLogin(request.username, context);
    const user = await store.users.findUserByUsername(request.username, foldUsername(request.username));
    // Unknown users are verified against a decoy hash: same answer, about the same time.
    if (!(await verifyPassword(user?.passwordHash, request.password)) || !user) {
      await audit.record('login', 'failed', { userId: user?.id, context, detail: { reason: 'password' } });
      throw new ServiceError('invalid_grant', WRONG_CREDENTIALS);
    }
    await throttle.loginSucceeded(attempt);

    const decision = await loginChallenge.decide(user, request, context);
    if ('challenge' in decision) return { mfaRequired: true, challenge: decision.challenge };
    const detail = {
      amr: decision.amr.join(' '),
      ...(decision.factorType ? { factor_type: decision.factorType } : {}),
    };
    await audit.record('login', 'succeeded', { userId: user.id, context, detail });
    const issued = await tokens.issueTokens({
      userId: user.id,
      clientId: request.clientId,
      scope: request.scope,
      amr: decision.amr,
      authTime: Math.floor(clock.now().getTime() / 1000),
      sessionId: randomUUID(),
    });
    return { tokens: issued, amr: decision.amr, factorType: decision.factorType };
  }

  return { grantWithPassword };
}

export type PasswordGrant = ReturnType<typeof createPasswordGrant>;
