import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../logins/sessions.js';
import type { LoginProof, StepUp } from '../logins/step-up.js';
import type { Factor } from '../store/mfa-factors.js';
import type { Store } from '../store/store.js';
import { type FactorType, type SecondFactor, toFactorType } from './factors/factor.js';
import type { MfaRemoval } from './mfa-removal.js';
import { isUnanswered, type SendOutcome } from './one-time-codes.js';

/** The seed's status object: MFA on, the default factor's type, the SMS number. */
export interface MfaStatus {
  isEnabled: boolean;
  challengeType: FactorType | '';
  phoneNumber: string;
}

export interface EnrolmentDeps {
  store: Store;
  sessions: Sessions;
  removal: MfaRemoval;
  stepUp: StepUp;
  audit: AuditTrail;
  clock: Clock;
}

/**
 * What every factor type shares: the status, the list of factors, and a factor's life after its
 * type has started it: proved (verified), renamed, made the default, removed.
 */
export function createEnrolment({ store, sessions, removal, stepUp, audit, clock }: EnrolmentDeps) {
  async function getStatus(userId: string): Promise<MfaStatus> {
    return statusOf(await store.factors.listFactors(userId));
  }

  /** The user's verified factors, oldest first. */
  async function listFactors(userId: string): Promise<Factor[]> {
    return (await store.factors.listFactors(userId)).filter(isVerified);
  }

  /**
   * Throws unless the user may add one more factor of `type` now, when an enrolment starts and
   * again when it finishes (CONTRACT §14: finishing is judged like starting): 409
   * `too_many_factors` at the type's limit; with MFA on, the step-up rule's 401, since a new factor
   * is a new way in; with MFA off, the 401 for a login older than STEP_UP_MAX_AGE.
   */
  async function requireRoomFor(type: SecondFactor, login: LoginProof): Promise<void> {
    const verified = await listFactors(login.userId);
    if (isFull(verified, type)) throw tooMany(type);
    const mfaEnabledAt = verified.length > 0 ? await store.factors.findMfaEnabledAt(login.userId) : undefined;
    stepUp.judgeEnrolment(login, mfaEnabledAt);
  }

  /**
   * Starts the enrolment of a factor proved by a code sent to it (SMS, email): `send` sends the
   * code, and the pending factor of `type` is kept, replacing an earlier one, once it went out, or
   * once the channel did not answer in time (the message may still arrive, and its code then
   * enrols: CONTRACT §15). Throws `requireRoomFor`'s answers, 429 `sms_cooldown` or
   * `email_cooldown` within the resend cooldown (nothing kept), or the channel's error.
   */
  async function startCodeEnrolment(
    type: SecondFactor,
    login: LoginProof,
    pending: { name: string; phoneNumber?: string },
    send: () => Promise<SendOutcome>,
  ): Promise<MfaStatus> {
    await requireRoomFor(type, login);
    const keepPending = () =>
      store.factors.replacePendingFactor({
        id: randomUUID(),
        userId: login.userId,
        type: type.type,
        createdAt: clock.now(),
        ...pending,
      });
    const sent = await send().catch(async (error: unknown) => {
      if (isUnanswered(error)) await keepPending();
      throw error;
    });
    if (sent.outcome === 'cooldown') {
      const [code, verb] =
        type.type === 'email' ? (['email_cooldown', 'mailed'] as const) : (['sms_cooldown', 'sent'] as const);
      throw new ServiceError(
        code,
        `a code was ${verb} moments ago; wait ${sent.retryAfterSeconds} s before asking again`,
        sent.retryAfterSeconds,
      );
    }
    await keepPending();
    return getStatus(login.userId);
  }

  /**
   * Makes the proved pending factor of `type` verified: the user's default if it is their first,
   * MFA on, and (CONTRACT §14) every other login of the user ended, in one transaction. Throws
   * `requireRoomFor`'s answers when what it judges changed meanwhile.
   */
  async function activate(
    type: SecondFactor,
    login: LoginProof,
    pending: Factor,
    settled: { phoneNumber?: string; counter?: number },
    context: RequestContext,
  ): Promise<MfaStatus> {
    const now = clock.now();
    await store.transaction(async (tx) => {
      const state = await tx.factors.lockUserMfa(login.userId);
      // Enrolments started side by side all passed requireRoomFor: the limit holds only here, and so
      // does the step-up rule, judged on the state this change meets (MFA turned on meanwhile, say).
      const verified = (await tx.factors.listFactors(login.userId)).filter(isVerified);
      if (isFull(verified, type)) throw tooMany(type);
      stepUp.judgeEnrolment(login, state?.mfaEnabledAt);
      const isFirst = !state?.mfaEnabledAt;
      if (!(await tx.factors.verifyFactor(pending.id, now, { ...settled, isDefault: isFirst }))) {
        throw new ServiceError('invalid_mfa_code', 'this enrolment was replaced or finished meanwhile; start again');
      }
      if (isFirst) await tx.factors.setMfaEnabledAt(login.userId, now);
      await sessions.endUserSessions(tx, login.userId, now, login.sessionId);
      const detail = { factor_type: pending.type, factor_id: pending.id };
      await audit.record(
        isFirst ? 'mfa_enabled' : 'factor_added',
        'succeeded',
        { userId: login.userId, context, detail },
        tx,
      );
    });
    return getStatus(login.userId);
  }

  /** Renames a verified factor and/or makes it the default (a sensitive call); throws 404 `not_found`. */
  async function updateFactor(
    login: LoginProof,
    factorId: string,
    change: { name?: string; isDefault?: boolean },
    context: RequestContext,
  ): Promise<Factor> {
    const factor = await getVerifiedFactor(login.userId, factorId);
    if (change.isDefault && !factor.isDefault) {
      await stepUp.requireRecentSecondFactor(login);
      await store.transaction(async (tx) => {
        // Behind the lock, so that a removal racing this one never leaves the user without a default.
        await tx.factors.lockUserMfa(login.userId);
        if (!(await tx.factors.setDefaultFactor(login.userId, factorId))) throw notFound();
        const detail = { factor_type: factor.type, factor_id: factor.id };
        await audit.record('factor_made_default', 'succeeded', { userId: login.userId, context, detail }, tx);
      });
    }
    if (change.name !== undefined) await store.factors.renameFactor(login.userId, factorId, change.name);
    return getVerifiedFactor(login.userId, factorId);
  }

  /**
   * Removes one verified factor with its secrets (a sensitive call). The last one turns MFA off,
   * exactly as `DELETE /mfa/`; any other ends the user's other logins, and a default is handed on.
   */
  async function removeFactor(login: LoginProof, factorId: string, context: RequestContext): Promise<void> {
    await getVerifiedFactor(login.userId, factorId); // an unknown id is 404 whoever asks, as for PATCH
    await stepUp.requireRecentSecondFactor(login);
    const now = clock.now();
    await store.transaction(async (tx) => {
      await tx.factors.lockUserMfa(login.userId);
      // Read under the lock: of two removals racing, the later sees the earlier's and removes the last.
      const verified = (await tx.factors.listFactors(login.userId)).filter(isVerified);
      const factor = verified.find((candidate) => candidate.id === factorId);
      if (!factor) throw notFound();
      if (verified.length === 1) {
        await removal.removeAllFactors(login.userId, { by: 'user', sessionId: login.sessionId, context }, tx);
        return;
      }
      await tx.factors.deleteFactor(login.userId, factorId);
      if (factor.type === 'sms') await removal.deleteSmsCodes(tx, login.userId);
      const heir = verified.find((other) => other.id !== factorId);
      if (factor.isDefault && heir) await tx.factors.setDefaultFactor(login.userId, heir.id);
      await sessions.endUserSessions(tx, login.userId, now, login.sessionId);
      const detail = { factor_type: factor.type, factor_id: factor.id };
      await audit.record('factor_removed', 'succeeded', { userId: login.userId, context, detail }, tx);
    });
  }

  /** Turns MFA off (every factor, pending codes, backup codes); a sensitive call. */
  async function disableMfa(login: LoginProof, context: RequestContext): Promise<void> {
    await stepUp.requireRecentSecondFactor(login);
    const { wasEnabled } = await removal.removeAllFactors(login.userId, {
      by: 'user',
      sessionId: login.sessionId,
      context,
    });
    if (!wasEnabled) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
  }

  async function getVerifiedFactor(userId: string, factorId: string): Promise<Factor> {
    const factor = await store.factors.findFactor(userId, factorId);
    if (factor?.status !== 'verified') throw notFound();
    return factor;
  }

  return {
    getStatus,
    listFactors,
    requireRoomFor,
    startCodeEnrolment,
    activate,
    updateFactor,
    removeFactor,
    disableMfa,
  };
}

export type Enrolment = ReturnType<typeof createEnrolment>;

/**
 * The seed's status: on when a factor is verified; the default factor's type; the number of the
 * SMS factor, verified or still pending.
 */
export function statusOf(factors: Factor[]): MfaStatus {
  const verified = factors.filter((factor) => factor.status === 'verified');
  const byDefault = verified.find((factor) => factor.isDefault) ?? verified[0];
  const withPhone =
    verified.find((factor) => factor.phoneNumber !== undefined) ??
    factors.find((factor) => factor.phoneNumber !== undefined);
  return {
    isEnabled: verified.length > 0,
    challengeType: byDefault ? toFactorType(byDefault.type) : '',
    phoneNumber: withPhone?.phoneNumber ?? '',
  };
}

function isVerified(factor: Factor): boolean {
  return factor.status === 'verified';
}

/** True when `verified` already holds as many factors of `type` as one user may. */
function isFull(verified: Factor[], type: SecondFactor): boolean {
  return verified.filter((factor) => factor.type === type.type).length >= type.maxPerUser;
}

/** CONTRACT §10's limit reached: 409, worded for a type that allows one or several. */
function tooMany(type: SecondFactor): ServiceError {
  return type.maxPerUser === 1
    ? new ServiceError('mfa_already_enabled', `a ${type.type} factor is already enrolled; remove it first`)
    : new ServiceError('too_many_factors', `at most ${type.maxPerUser} ${type.type} factors; remove one first`);
}

function notFound() {
  return new ServiceError('not_found', 'the user has no such factor; GET /mfa/factors/ lists them');
}
