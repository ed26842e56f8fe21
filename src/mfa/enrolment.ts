import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { MfaRecord } from '../store/mfa.js';
import type { Store } from '../store/store.js';
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
}

export const SECOND_FACTORS = ['sms', 'otp', 'backup'] as const;

export interface EnrolmentDeps {
  store: Store;
  codes: OneTimeCodes;
  audit: AuditTrail;
  clock: Clock;
}

/** SMS enrolment: status, request a code for a number, confirm it, turn MFA off. */
export function createEnrolment({ store, codes, audit, clock }: EnrolmentDeps) {
  async function getStatus(userId: string): Promise<MfaStatus> {
    return toStatus(await store.mfa.findMfa(userId));
  }

  /** Sends an enrolment code; throws 409 `mfa_already_enabled`, 429 `sms_cooldown`, or an SMS error. */
  async function requestSmsEnrolment(userId: string, phoneDigits: string, context: RequestContext): Promise<MfaStatus> {
    const phone = parsePhoneNumber(phoneDigits);
    if ((await store.mfa.findMfa(userId))?.isEnabled) throw alreadyEnabled();
    const sent = await codes.sendCode(userId, 'enrol', phone, context.log);
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
  async function confirmSmsEnrolment(userId: string, code: string, context: RequestContext): Promise<MfaStatus> {
    if ((await store.mfa.findMfa(userId))?.isEnabled) throw alreadyEnabled();
    const check = await codes.checkCode(userId, 'enrol', code);
    if (check.outcome !== 'ok') {
      await audit.record('mfa_code_check', check.outcome, { userId, context, detail: { purpose: 'enrol' } });
      throw new ServiceError('invalid_mfa_code', check.description);
    }
    if (!(await store.mfa.enableSms(userId, check.phoneNumber, clock.now()))) throw alreadyEnabled();
    await audit.record('mfa_enabled', 'succeeded', { userId, context, detail: { challenge_type: 'sms' } });
    return { isEnabled: true, challengeType: 'sms', phoneNumber: check.phoneNumber };
  }

  /** Turns MFA off, dropping the phone, pending codes and backup codes; needs a login that carried the second factor. */
  async function disableMfa(userId: string, login: LoginProof, context: RequestContext): Promise<void> {
    const mfa = await store.mfa.findMfa(userId);
    if (!mfa?.isEnabled) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
    requireSecondFactor(mfa, login);
    await store.transaction(async (tx) => {
      if (!(await tx.mfa.deleteEnabledMfa(userId))) {
        throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
      }
      await tx.codes.deleteCodes(userId);
      await tx.backupCodes.deleteBackupCodes(userId);
    });
    await audit.record('mfa_disabled', 'succeeded', { userId, context });
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
