import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { verifyPassword } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import type { BackupCodes } from '../mfa/backup-codes.js';
import type { GuessBudget } from '../mfa/guess-budget.js';
import type { OneTimeCodes } from '../mfa/one-time-codes.js';
import { parsePhoneNumber } from '../mfa/phone-numbers.js';
import type { Store } from '../store/store.js';
import { foldUsername } from '../users/accounts.js';
import type { LoginThrottle } from './login-throttle.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

export interface PasswordGrantRequest {
  clientId: string;
  username: string;
  password: string;
  scope: string;
  mfaCode?: string;
  backupCode?: string;
}

export type PasswordGrantResult = { tokens: TokenResponse; amr: string[] } | { mfaRequired: true; mfaType: 'sms' };

export interface PasswordGrantDeps {
  store: Store;
  codes: OneTimeCodes;
  backupCodes: BackupCodes;
  throttle: LoginThrottle;
  guesses: GuessBudget;
  tokens: TokenIssuer;
  audit: AuditTrail;
  metrics: ServiceMetrics;
  clock: Clock;
}

const WRONG_CREDENTIALS = 'the username or password is wrong';

/** RFC 6749 §4.3 resource owner password grant, asking for a one-time code when MFA is on. */
export function createPasswordGrant({
  store,
  codes,
  backupCodes,
  throttle,
  guesses,
  tokens,
  audit,
  metrics,
  clock,
}: PasswordGrantDeps) {
  /**
   * Tokens, or `mfaRequired` after sending a login code (unless one was sent inside the cooldown).
   * Throws `login_throttled` while too many logins failed, `invalid_grant` for wrong credentials or
   * codes. The password is checked before anything about MFA, so a wrong password reveals neither
   * the MFA state nor whether a code was right.
   */
  async function grantWithPassword(
    request: PasswordGrantRequest,
    context: RequestContext,
  ): Promise<PasswordGrantResult> {
    try {
      const result = await answer(request, context);
      if ('tokens' in result) metrics.loginAnswered('tokens', result.amr);
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

    const grant = {
      userId: user.id,
      clientId: request.clientId,
      scope: request.scope,
      authTime: Math.floor(clock.now().getTime() / 1000),
      sessionId: randomUUID(),
    };
    const succeed = async (amr: string[]) => {
      await audit.record('login', 'succeeded', { userId: user.id, context, detail: { amr: amr.join(' ') } });
      return { tokens: await tokens.issueTokens({ ...grant, amr }), amr };
    };

    const mfa = await store.mfa.findMfa(user.id);
    if (!mfa?.isEnabled || !mfa.phoneNumber) return succeed(['pwd']);
    if (request.mfaCode !== undefined) {
      await guesses.reserveGuess(user.id, context);
      const check = await codes.checkCode(user.id, 'login', request.mfaCode);
      if (check.outcome !== 'ok') {
        await audit.record('mfa_code_check', check.outcome, { userId: user.id, context, detail: { purpose: 'login' } });
        throw new ServiceError('invalid_grant', `mfa_code: ${check.description}`);
      }
      await guesses.guessSucceeded(user.id);
      return succeed(['pwd', 'sms']);
    }
    if (request.backupCode !== undefined) {
      await guesses.reserveGuess(user.id, context);
      if (!(await backupCodes.spendBackupCode(user.id, request.backupCode, context))) {
        throw new ServiceError('invalid_grant', 'backup_code: the code is wrong or already used');
      }
      await guesses.guessSucceeded(user.id);
      return succeed(['pwd', 'backup']);
    }
    // Inside the resend cooldown no SMS goes out; the code sent moments ago still works.
    await codes.sendCode(user.id, 'login', parsePhoneNumber(mfa.phoneNumber), context.log);
    await audit.record('login', 'mfa_required', { userId: user.id, context });
    return { mfaRequired: true, mfaType: 'sms' };
  }

  return { grantWithPassword };
}

export type PasswordGrant = ReturnType<typeof createPasswordGrant>;
