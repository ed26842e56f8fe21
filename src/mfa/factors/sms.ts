import type { AuditTrail, RequestContext } from '../../audit/audit-trail.js';
import { ServiceError } from '../../errors.js';
import type { LoginProof } from '../../logins/step-up.js';
import type { Factor } from '../../store/mfa-factors.js';
import type { Store } from '../../store/store.js';
import type { Enrolment, MfaStatus } from '../enrolment.js';
import type { OneTimeCodes } from '../one-time-codes.js';
import { parsePhoneNumber, parseSmsDestination } from '../phone-numbers.js';
import type { SecondFactor } from './factor.js';

export interface SmsFactorDeps {
  store: Store;
  codes: OneTimeCodes;
  enrolment: Enrolment;
  audit: AuditTrail;
  /** CONTRACT §15: line types refused as enrolment destinations (SMS_BLOCKED_LINE_TYPES). */
  blockedLineTypes: readonly string[];
}

/** SMS codes: the seed's factor. Enrolment sends a code to the number; a login sends one to the verified number. */
export function createSmsFactor({ store, codes, enrolment, audit, blockedLineTypes }: SmsFactorDeps) {
  const factor: SecondFactor = {
    type: 'sms',
    amr: 'sms',
    proof: 'code',
    maxPerUser: 1,
    canEnrolWhileSigningIn: true,

    async challenge(user, [verified], context) {
      // Inside the resend cooldown no SMS goes out; the code sent moments ago still works.
      // A verified number is only parsed, not judged again: rules tightened since must not lock its owner out.
      if (verified?.phoneNumber)
        await codes.sendCode(user.id, 'login', parsePhoneNumber(verified.phoneNumber), context);
      return {};
    },

    async check(user, [verified], code, context) {
      if (!verified || typeof code !== 'string') return { refused: 'no SMS factor', applies: false };
      const check = await codes.checkCode(user.id, 'login', code);
      if (check.outcome === 'ok' && check.destination === verified.phoneNumber) return { accepted: verified };
      // A code whose SMS was still at the provider when its number was removed proves only that number.
      const refusal =
        check.outcome === 'ok'
          ? { outcome: 'wrong' as const, description: 'the code was sent to a number no longer enrolled' }
          : check;
      await audit.record('mfa_code_check', refusal.outcome, {
        userId: user.id,
        context,
        detail: { purpose: 'login', factor_type: 'sms', factor_id: verified.id },
      });
      return { refused: refusal.description, applies: refusal.outcome !== 'none' };
    },
  };

  /**
   * Sends an enrolment code to the number and keeps it as the pending SMS factor; throws 409
   * `mfa_already_enabled` when an SMS factor is verified, 429 `sms_cooldown`, or an SMS error.
   */
  async function requestEnrolment(login: LoginProof, phoneDigits: string, context: RequestContext): Promise<MfaStatus> {
    const phone = parseSmsDestination(phoneDigits, blockedLineTypes);
    return enrolment.startCodeEnrolment(factor, login, { name: 'SMS', phoneNumber: phone.digits }, () =>
      codes.sendCode(login.userId, 'enrol', phone, context),
    );
  }

  /** Verifies the pending SMS factor with the code sent to it; throws `invalid_mfa_code` for a bad code. */
  async function confirmEnrolment(login: LoginProof, code: string, context: RequestContext): Promise<MfaStatus> {
    const pending = await findPending(login.userId);
    if (!pending) {
      const isOn = (await enrolment.listFactors(login.userId)).some((other) => other.type === 'sms');
      throw isOn
        ? new ServiceError('mfa_already_enabled', 'an SMS factor is already enrolled; remove it first')
        : new ServiceError('invalid_mfa_code', 'no code is pending; request one with PUT /mfa/sms/request/');
    }
    // Judged before the code is spent: a login that may not add a factor now learns nothing of it.
    await enrolment.requireRoomFor(factor, login);
    const check = await codes.checkCode(login.userId, 'enrol', code);
    if (check.outcome !== 'ok') {
      await audit.record('mfa_code_check', check.outcome, {
        userId: login.userId,
        context,
        detail: { purpose: 'enrol', factor_type: 'sms' },
      });
      throw new ServiceError('invalid_mfa_code', check.description);
    }
    return enrolment.activate(factor, login, pending, { phoneNumber: check.destination }, context);
  }

  async function findPending(userId: string): Promise<Factor | undefined> {
    const factors = await store.factors.listFactors(userId);
    return factors.find((candidate) => candidate.type === 'sms' && candidate.status === 'pending');
  }

  return { ...factor, requestEnrolment, confirmEnrolment };
}

export type SmsFactor = ReturnType<typeof createSmsFactor>;
