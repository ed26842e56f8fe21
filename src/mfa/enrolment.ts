import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../oauth/sessions.js';
import type { MfaRecord } from '../store/mfa.js';
import type { Store } from '../store/store.js';
import type { MfaRemoval } from './mfa-removal.js';
import type { OneTimeCodes } from './one-time-codes.js';
import { parsePhoneNumber } from './phone-numbers.js';

export interface MfaStatus {
  isEnabled: boolean;
  challengeType: 'sms' | '';
  phoneNumber: string;
}

/** How the caller's login was proved, from its access token. */
export interface LoginProof {
  amr: readonly string[];
  /** Seconds since the epoch. */
  authTime: number;
  /** The login (refresh-token family) the token belongs to. */
  sessionId: string;
}

export const SECOND_FACTORS = ['sms', 'otp', 'backup'] as const;

export interface EnrolmentDeps {
  store: Store;
  codes: OneTimeCodes;
  sessions: Sessions;
  removal: MfaRemoval;
  audit: AuditTrail;
  clock: Clock;
}

/** SMS enrolment: status, request a code for a number, confirm it, turn MFA off. */
export function createEnrolment({ store, codes, sessions, removal, audit, clock }: EnrolmentDeps) {
  async function getStatus(userId: string): Promise<MfaStatus> {
    return toStatus(await store.mfa.findMfa(userId));
  }

  /** Sends an enrolment code; throws 409 `mfa_already_enabled`, 429 `sms_cooldown`, or an SMS error. */
  async function requestSmsEnrolment(userId: string, phoneDigits: string, context: RequestContext): Promise<MfaStatus> {
    const phone = parsePhoneNumber(phoneDigits);
    if ((await store.mfa.findMfa(userId))?.isEnabled) throw alreadyEnabled();
    const sent = await codes.sendCode(userId, 'enrol', phone, context.log).catch(async (error: unknown) => {
      // The message may still arrive (CONTRACT §15): its code then enrols the number.
      if (error instanceof ServiceError && error.code === 'sms_timeout')
        await store.mfa.setPendingPhone(userId, phone.digits);
      throw error;
    });
    if (sent.outcome === 'cooldown') {
      throw new ServiceError(
        'sms_cooldown',
        'a code was sent moments ago; wait before asking again',
        sent.retryAfterSeconds,
      );
    }
    if (!(await store.mfa.setPendingPhone(userId, phone.digits))) throw alreadyEnabled();
    return { isEnabled: false, challengeType: '', phoneNumber: phone.digits };
  }

  /** Turns SMS MFA on for the number the code was sent to; throws `invalid_mfa_code` for a bad code. */
  async function confirmSmsEnrolment(
    userId: string,
    code: string,
    login: LoginProof,
    context: RequestContext,
  ): Promise<MfaStatus> {
    if ((await store.mfa.findMfa(userId))?.isEnabled) throw alreadyEnabled();
    const check = await codes.checkCode(userId, 'enrol', code);
    if (check.outcome !== 'ok') {
      await audit.record('mfa_code_check', check.outcome, { userId, context, detail: { purpose: 'enrol' } });
      throw new ServiceError('invalid_mfa_code', check.description);
    }
    const now = clock.now();
    // CONTRACT §14: turning MFA on ends every other login, made when a password was enough.
    const enabled = await store.transaction(async (tx) => {
      if (!(await tx.mfa.enableSms(userId, check.phoneNumber, now))) return false;
      await sessions.endUserSessions(tx, userId, now, login.sessionId);
      return true;
    });
    if (!enabled) throw alreadyEnabled();
    await audit.record('mfa_enabled', 'succeeded', { userId, context, detail: { challenge_type: 'sms' } });
    return { isEnabled: true, challengeType: 'sms', phoneNumber: check.phoneNumber };
  }

  /** Turns MFA off, dropping the phone, pending codes and backup codes; needs a login that carried the second factor. */
  async function disableMfa(userId: string, login: LoginProof, context: RequestContext): Promise<void> {
    const mfa = await store.mfa.findMfa(userId);
    if (!mfa?.isEnabled) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
    requireSecondFactor(mfa, login);
    const { wasEnabled } = await removal.removeAllFactors(userId, {
      by: 'user',
      sessionId: login.sessionId,
      context,
    });
    if (!wasEnabled) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
  }

  return { getStatus, requestSmsEnrolment, confirmSmsEnrolment, disableMfa };
}

/**
 * Throws 403 unless the login proved a second factor while the current enrolment was on:
 * a token from before MFA was (re-)enabled does not count, whatever its amr says.
 */
export function requireSecondFactor(mfa: MfaRecord, login: LoginProof): void {
  const hasSecondFactor = login.amr.some((method) => (SECOND_FACTORS as readonly string[]).includes(method));
  const enabledAtSeconds = Math.floor((mfa.enabledAt?.getTime() ?? Number.POSITIVE_INFINITY) / 1000);
  if (!hasSecondFactor || login.authTime < enabledAtSeconds) {
    throw new ServiceError(
      'insufficient_user_authentication',
      'this call needs a login that used the second factor; log in again with a code',
    );
  }
}

function toStatus(mfa: MfaRecord | undefined): MfaStatus {
  return mfa?.isEnabled
    ? { isEnabled: true, challengeType: 'sms', phoneNumber: mfa.phoneNumber ?? '' }
    : { isEnabled: false, challengeType: '', phoneNumber: mfa?.phoneNumber ?? '' };
}

function alreadyEnabled() {
  return new ServiceError('mfa_already_enabled', 'multifactor authentication is already on; turn it off first');
}

export type Enrolment = ReturnType<typeof createEnrolment>;
