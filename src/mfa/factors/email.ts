import type { AuditTrail, RequestContext } from '../../audit/audit-trail.js';
import { ServiceError } from '../../errors.js';
import type { LoginProof } from '../../logins/step-up.js';
import type { EmailPurpose } from '../../store/database.js';
import type { Store } from '../../store/store.js';
import type { Enrolment, MfaStatus } from '../enrolment.js';
import type { CodeCheck, OneTimeCodes } from '../one-time-codes.js';
import type { SecondFactor } from './factor.js';

export interface EmailFactorDeps {
  store: Store;
  codes: OneTimeCodes;
  enrolment: Enrolment;
  audit: AuditTrail;
  /** EMAIL_FACTOR=on: new email factors may be added. Those added before it was turned off keep working. */
  isOffered: boolean;
}

/**
 * Email codes (CONTRACT §20, EMAIL_FACTOR=on): SMS codes' rules and machinery (one-time-codes.ts),
 * sent to the account's verified address. The factor holds no address of its own: codes go to the
 * address the account has when they are sent, and a code counts only while that is still its address.
 */
export function createEmailFactor({ store, codes, enrolment, audit, isOffered }: EmailFactorDeps) {
  const factor: SecondFactor = {
    type: 'email',
    amr: 'email',
    proof: 'code',
    maxPerUser: 1,
    canEnrolWhileSigningIn: false,

    async challenge(user, [verified], context) {
      // Inside the resend cooldown no mail goes out; the code sent moments ago still works.
      const address = verified && (await findVerifiedAddress(user.id));
      if (address) await codes.sendEmailCode(user.id, 'email_login', address, context);
      return {};
    },

    async check(user, [verified], code, context) {
      if (!verified || typeof code !== 'string') return { refused: 'no email factor', applies: false };
      const refusal = await judge(user.id, 'email_login', code);
      if (refusal.outcome === 'ok') return { accepted: verified };
      await audit.record('mfa_code_check', refusal.outcome, {
        userId: user.id,
        context,
        detail: { purpose: 'login', factor_type: 'email', factor_id: verified.id },
      });
      return { refused: refusal.description, applies: refusal.outcome !== 'none' };
    },
  };

  /**
   * Mails an enrolment code to the account's verified address and keeps the pending email factor.
   * Throws 400 `invalid_request` while EMAIL_FACTOR is off, 409 `email_not_verified` without a
   * verified address, 409 `mfa_already_enabled`, 429 `email_cooldown`, or a mail error.
   */
  async function requestEnrolment(login: LoginProof, context: RequestContext): Promise<MfaStatus & { email: string }> {
    if (!isOffered) {
      throw new ServiceError(
        'invalid_request',
        'email codes as a second factor are off on this service (its operator turns them on with EMAIL_FACTOR=on); add an authenticator app, a passkey or a phone instead',
      );
    }
    const address = await findVerifiedAddress(login.userId);
    if (!address) {
      throw new ServiceError(
        'email_not_verified',
        'this account has no verified email address to mail codes to: add one with PUT /mfa/email/request/ and PUT /mfa/email/verify/ first',
      );
    }
    const status = await enrolment.startCodeEnrolment(factor, login, { name: 'Email' }, () =>
      codes.sendEmailCode(login.userId, 'email_enrol', address, context),
    );
    return { ...status, email: address };
  }

  /** Verifies the pending email factor with the code mailed; throws `invalid_mfa_code` for a bad code. */
  async function confirmEnrolment(login: LoginProof, code: string, context: RequestContext): Promise<MfaStatus> {
    const factors = await store.factors.listFactors(login.userId);
    const pending = factors.find((candidate) => candidate.type === 'email' && candidate.status === 'pending');
    if (!pending) {
      throw factors.some((other) => other.type === 'email' && other.status === 'verified')
        ? new ServiceError('mfa_already_enabled', 'email codes are already on; remove them first')
        : new ServiceError('invalid_mfa_code', 'no code is pending; request one with PUT /mfa/email-factor/request/');
    }
    // Judged before the code is spent: a login that may not add a factor now learns nothing of it.
    await enrolment.requireRoomFor(factor, login);
    const refusal = await judge(login.userId, 'email_enrol', code);
    if (refusal.outcome !== 'ok') {
      await audit.record('mfa_code_check', refusal.outcome, {
        userId: login.userId,
        context,
        detail: { purpose: 'enrol', factor_type: 'email' },
      });
      throw new ServiceError('invalid_mfa_code', refusal.description);
    }
    return enrolment.activate(factor, login, pending, {}, context);
  }

  /** Whether the service offers email codes, and the address they would go to ("" when none is verified). */
  async function describe(userId: string): Promise<{ offered: boolean; email: string }> {
    return { offered: isOffered, email: (await findVerifiedAddress(userId)) ?? '' };
  }

  /** Spends the code; a code mailed before the account's address changed proves only that old address. */
  async function judge(userId: string, purpose: EmailPurpose, code: string): Promise<CodeCheck> {
    const check = await codes.checkCode(userId, purpose, code);
    if (check.outcome !== 'ok') return check;
    const address = await findVerifiedAddress(userId);
    if (check.destination.toLowerCase() === address?.toLowerCase()) return check;
    return { outcome: 'wrong', description: "the code was mailed to an address no longer the account's" };
  }

  async function findVerifiedAddress(userId: string): Promise<string | undefined> {
    const email = await store.emails.findUserEmail(userId);
    return email?.verifiedAt ? email.email : undefined;
  }

  return { ...factor, describe, requestEnrolment, confirmEnrolment };
}

export type EmailFactor = ReturnType<typeof createEmailFactor>;
