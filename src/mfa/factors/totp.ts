import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../../audit/audit-trail.js';
import type { Clock } from '../../clock.js';
import { seal, unseal } from '../../crypto/sealing.js';
import { safeEqual } from '../../crypto/secrets.js';
import { base32, hotp, totpStep } from '../../crypto/totp.js';
import { ServiceError } from '../../errors.js';
import type { LoginProof } from '../../logins/step-up.js';
import type { ServiceMetrics } from '../../metrics/metrics.js';
import type { Factor } from '../../store/mfa-factors.js';
import type { Store } from '../../store/store.js';
import type { Enrolment, MfaStatus } from '../enrolment.js';
import type { GuessBudget } from '../guess-budget.js';
import type { SecondFactor } from './factor.js';

/** A pending enrolment lives this long (CONTRACT §11). */
const PENDING_TTL_MS = 10 * 60_000;
/** RFC 6238 §5.2: one step either side absorbs clock drift and typing time. */
const ACCEPTED_DRIFT_STEPS = 1;
/** CONTRACT §14: a pending enrolment dies after this many wrong codes, like an SMS code. */
const MAX_ENROLMENT_ATTEMPTS = 5;

export interface TotpFactorDeps {
  store: Store;
  guesses: GuessBudget;
  metrics: ServiceMetrics;
  enrolment: Enrolment;
  audit: AuditTrail;
  clock: Clock;
  /** Seals the secrets at rest (AES-256-GCM). */
  sealingKey: Buffer;
  /** The issuer authenticator apps show. */
  serviceName: string;
}

export interface TotpEnrolmentStart {
  factorId: string;
  /** Base32 without padding, for typing in by hand. */
  secret: string;
  otpauthUri: string;
}

/** Authenticator apps (RFC 6238 TOTP): a 160-bit secret shared once, a 6-digit code each 30 s. */
export function createTotpFactor({
  store,
  guesses,
  metrics,
  enrolment,
  audit,
  clock,
  sealingKey,
  serviceName,
}: TotpFactorDeps) {
  const openSecret = (factor: Factor) =>
    Buffer.from(unseal(factor.sealedSecret ?? '', sealingKey, factor.id), 'base64url');

  /**
   * The step whose code `code` is, within the drift allowed around now, and whether it may still
   * be accepted (a step once accepted, or any earlier one, never is again).
   */
  function matchStep(factor: Factor, code: string): { step: number; isFresh: boolean } | undefined {
    const secret = openSecret(factor);
    const now = totpStep(clock.now());
    for (let step = now - ACCEPTED_DRIFT_STEPS; step <= now + ACCEPTED_DRIFT_STEPS; step++) {
      if (safeEqual(hotp(secret, step), code)) return { step, isFresh: step > (factor.counter ?? -1) };
    }
    return undefined;
  }

  const factor: SecondFactor = {
    type: 'totp',
    amr: 'otp',
    proof: 'code',
    maxPerUser: 5,
    canEnrolWhileSigningIn: true,

    async challenge() {
      return {}; // the app makes the code: nothing to send
    },

    async check(user, factors, code, context) {
      if (typeof code !== 'string') return { refused: 'an authenticator app takes a 6-digit code', applies: false };
      let replayed = false;
      for (const candidate of factors) {
        const match = matchStep(candidate, code);
        if (!match) continue;
        // The conditional update settles races: of many requests with one code, one moves the step.
        if (match.isFresh && (await store.factors.advanceCounter(candidate.id, match.step))) {
          metrics.codeChecked('login', 'ok', 'totp');
          return { accepted: candidate };
        }
        replayed = true;
      }
      const outcome = replayed ? 'spent' : 'wrong';
      metrics.codeChecked('login', outcome, 'totp');
      await audit.record('mfa_code_check', outcome, {
        userId: user.id,
        context,
        detail: { purpose: 'login', factor_type: 'totp' },
      });
      return {
        refused: replayed ? 'this authenticator code was already used; wait for the next one' : 'the code is wrong',
        applies: true,
      };
    },
  };

  /**
   * Makes a new secret and keeps it as the pending TOTP factor (replacing an earlier pending one);
   * the answer is the only place the secret is ever shown.
   */
  async function requestEnrolment(login: LoginProof, name: string | undefined): Promise<TotpEnrolmentStart> {
    await enrolment.requireRoomFor(factor, login);
    const user = await store.users.findUserById(login.userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    const id = randomUUID();
    const secret = randomBytes(20); // 160 bits, RFC 4226 §4's recommendation
    await store.factors.replacePendingFactor({
      id,
      userId: login.userId,
      type: 'totp',
      name: name ?? 'Authenticator app',
      createdAt: clock.now(),
      sealedSecret: seal(secret.toString('base64url'), sealingKey, id),
    });
    const encoded = base32(secret);
    return { factorId: id, secret: encoded, otpauthUri: otpauthUri(serviceName, user.username, encoded) };
  }

  /**
   * Verifies the pending TOTP factor with a code from the app; throws `invalid_mfa_code` for a wrong
   * code or a dead enrolment, 429 `mfa_throttled` past the user's guess budget, and the step-up
   * rule's 401 when this login may not add a factor now.
   */
  async function confirmEnrolment(login: LoginProof, code: string, context: RequestContext): Promise<MfaStatus> {
    const factors = await store.factors.listFactors(login.userId);
    const pending = factors.find((candidate) => candidate.type === 'totp' && candidate.status === 'pending');
    if (!pending || pending.createdAt.getTime() + PENDING_TTL_MS <= clock.now().getTime()) {
      throw new ServiceError(
        'invalid_mfa_code',
        'no authenticator app enrolment is pending (they last 10 minutes); start one with PUT /mfa/totp/request/',
      );
    }
    await enrolment.requireRoomFor(factor, login);
    // Each code is counted before it is judged, in the user's guess budget and on the enrolment
    // (CONTRACT §14), in one transaction: a code the budget refuses (429) spends none of the
    // enrolment's tries, a code that finds the enrolment closed none of the budget, and of many codes
    // sent at once at most five are judged.
    const countTry = async (tx: Store) => {
      if (!(await tx.factors.countEnrolmentAttempt(pending.id, MAX_ENROLMENT_ATTEMPTS))) {
        throw new ServiceError(
          'invalid_mfa_code',
          `this enrolment had ${MAX_ENROLMENT_ATTEMPTS} wrong codes and is closed; start again with PUT /mfa/totp/request/ (the app needs the new key)`,
        );
      }
    };
    const match = await guesses.judgeGuess(
      login.userId,
      context,
      async () => matchStep(pending, code) ?? false,
      countTry,
    );
    if (!match) {
      metrics.codeChecked('enrol', 'wrong', 'totp');
      await audit.record('mfa_code_check', 'wrong', {
        userId: login.userId,
        context,
        detail: { purpose: 'enrol', factor_type: 'totp' },
      });
      throw new ServiceError('invalid_mfa_code', 'the code is wrong; check the app was given this secret');
    }
    metrics.codeChecked('enrol', 'ok', 'totp');
    // The step proved here is never accepted again (CONTRACT §11): the factor starts past it.
    return enrolment.activate(factor, login, pending, { counter: match.step }, context);
  }

  return { ...factor, requestEnrolment, confirmEnrolment };
}

export type TotpFactor = ReturnType<typeof createTotpFactor>;

/** Key Uri Format as authenticator apps read it: otpauth://totp/Issuer:account?secret=…&issuer=Issuer&… */
export function otpauthUri(serviceName: string, username: string, secret: string): string {
  const label = `${encodeURIComponent(serviceName)}:${encodeURIComponent(username)}`;
  const query = new URLSearchParams({ secret, issuer: serviceName, algorithm: 'SHA1', digits: '6', period: '30' });
  return `otpauth://totp/${label}?${query.toString().replace(/\+/g, '%20')}`;
}
