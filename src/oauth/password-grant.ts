import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { acrOf } from '../logins/step-up.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import type { WebauthnFactor } from '../mfa/factors/webauthn.js';
import {
  type LoginChallenge,
  type LoginDecision,
  requireOneProofAtMost,
  type SecondStep,
} from '../mfa/login-challenge.js';
import { provesSecondFactor, type RecoveryRequests } from '../mfa/recovery-requests.js';
import type { Store } from '../store/store.js';
import type { StoredUser } from '../store/users.js';
import { type AuthenticatedClient, requireAllowedScope } from './clients.js';
import type { PasswordCheck } from './password-check.js';
import type { TokenIssuer, TokenResponse } from './token-issuer.js';

export interface PasswordGrantRequest extends SecondStep {
  client: AuthenticatedClient;
  username: string;
  password: string;
  scope: string;
}

/** CONTRACT §14: the second step of a login, proved with the `mfa_token` instead of the password. */
export interface MfaTokenGrantRequest {
  client: AuthenticatedClient;
  mfaToken: string;
  /** `otp` of the mfa-otp grant: an SMS or TOTP code. */
  otp?: string;
  /** `recovery_code` of the mfa-recovery-code grant: a backup code. */
  recoveryCode?: string;
}

type Challenge = Extract<LoginDecision, { challenge: unknown }>['challenge'];

/** A login's tokens and how it was proved. */
export type PasswordGrantTokens = { tokens: TokenResponse; amr: string[]; factorType?: string };
export type PasswordGrantResult = PasswordGrantTokens | { mfaRequired: true; challenge: Challenge };

export interface PasswordGrantDeps {
  store: Store;
  loginChallenge: LoginChallenge;
  passwords: PasswordCheck;
  /** Passkey sign-ins without a username. */
  passkeys: Pick<WebauthnFactor, 'verifySignIn'>;
  /** CONTRACT §20: a sign-in with a second factor cancels a waiting recovery; a ready one completes here. */
  recovery: Pick<RecoveryRequests, 'cancelRecovery' | 'completeRecovery'>;
  tokens: TokenIssuer;
  audit: AuditTrail;
  metrics: ServiceMetrics;
  clock: Clock;
}

/**
 * CONTRACT §19: signing in with a passkey alone (no username, no password), for first-party pages
 * such as the account page; apps use the hosted sign-in, which offers the same. An extension grant
 * (RFC 6749 §4.5), named by an absolute URI.
 */
export const PASSKEY_GRANT = 'urn:mfa-service:grant-type:passkey';

/** CONTRACT §14's grant types, spelt as Auth0 spells them so that its client libraries work unchanged. */
export const MFA_OTP_GRANT = 'http://auth0.com/oauth/grant-type/mfa-otp';
export const MFA_RECOVERY_CODE_GRANT = 'http://auth0.com/oauth/grant-type/mfa-recovery-code';

/** An mfa_token lives this long (CONTRACT §14). */
const MFA_TOKEN_TTL_MS = 5 * 60_000;

/** RFC 6749 §4.3 resource owner password grant, asking for a second factor when the user has one. */
export function createPasswordGrant({
  store,
  loginChallenge,
  passwords,
  passkeys,
  recovery,
  tokens,
  audit,
  metrics,
  clock,
}: PasswordGrantDeps) {
  /** Counts the answer in the metrics, whichever it is. */
  async function counted<R extends PasswordGrantResult>(work: () => Promise<R>): Promise<R> {
    try {
      const result = await work();
      if ('tokens' in result) metrics.loginAnswered('tokens', result.amr, result.factorType);
      else metrics.loginAnswered('mfa_required');
      return result;
    } catch (error) {
      if (error instanceof ServiceError) {
        if (error.code === 'invalid_grant') metrics.loginAnswered('invalid_grant');
        if (error.code === 'mfa_required') metrics.loginAnswered('mfa_required');
        if (error.code === 'login_throttled' || error.code === 'mfa_throttled') metrics.loginAnswered('throttled');
      }
      throw error;
    }
  }

  /**
   * Tokens, or `mfaRequired` with the challenge the user's factor asks for (for a client that
   * takes the 403 challenge, the 403 `mfa_required` error with an `mfa_token`). Throws
   * `login_throttled` / `mfa_throttled` while too many attempts failed, `invalid_grant` for wrong
   * credentials or proofs. The password is checked before anything about MFA, so a wrong password
   * reveals neither the MFA state nor whether a code was right.
   */
  function grantWithPassword(request: PasswordGrantRequest, context: RequestContext): Promise<PasswordGrantResult> {
    return counted(async () => {
      requireOneProofAtMost(request);
      requireAllowedScope(request.client, request.scope);
      const user = await passwords.checkPassword(request.username, request.password, context);

      const decision = await loginChallenge.decide(user, request, context);
      if ('amr' in decision) {
        const authTime = Math.floor(clock.now().getTime() / 1000);
        const login = { user, client: request.client, scope: request.scope, authTime };
        return succeed(login, decision, context);
      }
      if (request.client.mfaChallenge === 'error') await refuseWithMfaToken(user.id, request, decision);
      return { mfaRequired: true, challenge: decision.challenge };
    });
  }

  /**
   * The mfa-otp and mfa-recovery-code grants: finishes the login the `mfa_token` stands for with
   * its second factor, once. Throws `invalid_grant` for an unknown, expired, spent or other
   * client's token, or a wrong proof (the token stays usable for another try until it expires).
   */
  function grantWithMfaToken(request: MfaTokenGrantRequest, context: RequestContext): Promise<PasswordGrantResult> {
    return counted(async () => {
      const tokenHash = sha256(request.mfaToken);
      const pending = await store.mfaTokens.findLiveMfaToken(tokenHash, clock.now());
      if (!pending || pending.clientId !== request.client.id) {
        throw new ServiceError(
          'invalid_grant',
          'the mfa_token is unknown, expired or used; log in again with the password',
        );
      }
      const user = await store.users.findUserById(pending.userId);
      if (!user) throw new ServiceError('invalid_grant', 'the user of this mfa_token no longer exists');
      const decision = await loginChallenge.decide(
        user,
        {
          mfaCode: request.otp,
          backupCode: request.recoveryCode,
          acrValues: [pending.requiredAcr],
          fieldNames: { code: 'otp', backupCode: 'recovery_code' },
        },
        context,
      );
      if (!('amr' in decision))
        throw new ServiceError('invalid_request', 'send otp or recovery_code with the mfa_token');
      // The conditional update settles races: of two right proofs sent at once, one gets tokens.
      if (!(await store.mfaTokens.spendMfaToken(tokenHash, clock.now()))) {
        throw new ServiceError('invalid_grant', 'the mfa_token was used meanwhile; log in again with the password');
      }
      const login = { user, client: request.client, scope: pending.scope, authTime: pending.authTime };
      return succeed(login, decision, context);
    });
  }

  /**
   * The passkey grant: a passkey sign-in without a username (webauthn.ts's verifySignIn), which
   * reaches phr: amr hwk and user (it verified the person). Throws `invalid_grant`, `mfa_throttled`.
   */
  function grantWithPasskey(
    request: { client: AuthenticatedClient; webauthnResponse: Record<string, unknown>; scope: string },
    context: RequestContext,
  ): Promise<PasswordGrantResult> {
    return counted(async () => {
      requireAllowedScope(request.client, request.scope);
      const { user } = await passkeys.verifySignIn(request.webauthnResponse, context);
      const authTime = Math.floor(clock.now().getTime() / 1000);
      const login = { user, client: request.client, scope: request.scope, authTime };
      return succeed(login, { amr: ['hwk', 'user'], factorType: 'webauthn' }, context, 'passkey');
    });
  }

  /**
   * CONTRACT §20: POST /mfa/recovery-request/complete/, the password grant of a user whose recovery
   * request is ready: every factor is removed (recovery-requests.ts), then tokens as for a login
   * without MFA. Throws as the password grant does, and 409 `recovery_waiting` /
   * `no_recovery_request`.
   */
  function grantAfterRecovery(
    request: { client: AuthenticatedClient; username: string; password: string },
    context: RequestContext,
  ): Promise<PasswordGrantTokens> {
    return counted(async () => {
      const checked = await passwords.checkPassword(request.username, request.password, context);
      await recovery.completeRecovery(checked, context);
      // Read again: the recovery ended every login, which moved the user's session generation.
      const user = await store.users.findUserById(checked.id);
      if (!user) throw new ServiceError('invalid_grant', 'the user no longer exists');
      const authTime = Math.floor(clock.now().getTime() / 1000);
      return succeed({ user, client: request.client, scope: '', authTime }, { amr: ['pwd'] }, context);
    });
  }

  /**
   * Tokens for the login. Its `authTime` is when the password was given, also for a login finished
   * with an mfa_token (CONTRACT §14: a login lasts REFRESH_TOKEN_TTL from the password).
   */
  async function succeed(
    login: { user: StoredUser; client: AuthenticatedClient; scope: string; authTime: number },
    decision: Extract<LoginDecision, { amr: unknown }>,
    context: RequestContext,
    flow: 'password' | 'passkey' = 'password',
  ): Promise<PasswordGrantTokens> {
    const { user } = login;
    // A sign-in with a second factor cancels a waiting recovery (CONTRACT §20): before any token is issued.
    if (provesSecondFactor(decision.amr)) await recovery.cancelRecovery(user.id, 'by_sign_in', context);
    const issued = await tokens.startLogin(
      {
        userId: user.id,
        clientId: login.client.id,
        scope: login.scope,
        amr: decision.amr,
        acr: acrOf(decision.amr),
        authTime: login.authTime,
        sessionId: randomUUID(),
      },
      user.sessionGeneration,
    );
    if (!issued) {
      await audit.record('login', 'failed', { userId: user.id, context, detail: { reason: 'factors_changed' } });
      throw new ServiceError('invalid_grant', "the user's second factors changed during this login; log in again");
    }
    const detail: Record<string, string> = { amr: decision.amr.join(' ') };
    if (decision.factorType) detail.factor_type = decision.factorType;
    if (flow === 'passkey') detail.flow = flow;
    await audit.record('login', 'succeeded', { userId: user.id, context, detail });
    metrics.signedIn(flow, decision.amr);
    return { tokens: issued, amr: decision.amr, factorType: decision.factorType };
  }

  /**
   * CONTRACT §14: a client registered with `mfa_challenge: "error"` gets RFC 6749's error shape, as
   * Auth0 answers it: 403 `mfa_required` with an opaque `mfa_token` (5 minutes, single use, bound to
   * the user and the client, stored hashed) instead of the seed's 200.
   */
  async function refuseWithMfaToken(
    userId: string,
    request: PasswordGrantRequest,
    decision: Extract<LoginDecision, { challenge: unknown }>,
  ): Promise<never> {
    const mfaToken = randomToken(32);
    const now = clock.now();
    await store.mfaTokens.insertMfaToken(
      {
        tokenHash: sha256(mfaToken),
        userId,
        clientId: request.client.id,
        requiredAcr: decision.requiredAcr,
        scope: request.scope,
        expiresAt: new Date(now.getTime() + MFA_TOKEN_TTL_MS),
      },
      now,
    );
    const { mfaType, mfaTypes, ...challenge } = decision.challenge;
    throw new ServiceError(
      'mfa_required',
      `a second factor is needed: send this mfa_token with grant_type ${MFA_OTP_GRANT} and otp, or ${MFA_RECOVERY_CODE_GRANT} and recovery_code`,
      undefined,
      { mfa_token: mfaToken, mfa_type: mfaType, ...(mfaTypes ? { mfa_types: mfaTypes } : {}), ...challenge },
    );
  }

  return { grantWithPassword, grantWithMfaToken, grantWithPasskey, grantAfterRecovery };
}

export type PasswordGrant = ReturnType<typeof createPasswordGrant>;
