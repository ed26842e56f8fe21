import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

/** How the caller's login was proved, from its access token. */
export interface LoginProof {
  userId: string;
  /** RFC 8176 methods: ["pwd"], or ["pwd", <a second factor>]. */
  amr: readonly string[];
  /** What the login reached: usually `acrOf(amr)`; a remembered device's reaches aal2 only. */
  acr: Acr;
  /** Seconds since the epoch. */
  authTime: number;
  /** The login (refresh-token family) the token belongs to. */
  sessionId: string;
}

/**
 * Authentication context classes (CONTRACT §14), weakest first: the password alone; a password
 * and a second factor (a backup code included); a password and a phishing-resistant passkey.
 */
export const ACR_VALUES = ['aal1', 'aal2', 'phr'] as const;
export type Acr = (typeof ACR_VALUES)[number];

/** The acr a login's methods reach: a passkey (RFC 8176 `hwk`) is phishing-resistant. */
export function acrOf(amr: readonly string[]): Acr {
  if (amr.includes('hwk')) return 'phr';
  return amr.some((method) => method !== 'pwd') ? 'aal2' : 'aal1';
}

/** True when `acr` is `required` or stronger. */
export function meetsAcr(acr: Acr, required: Acr): boolean {
  return ACR_VALUES.indexOf(acr) >= ACR_VALUES.indexOf(required);
}

/** What a sensitive call asks of the login (RFC 9470 §3): a second factor; the age comes from STEP_UP_MAX_AGE. */
export const SENSITIVE_ACR: Acr = 'aal2';

/**
 * RFC 9470's 401: the login must be stepped up; the handler adds its WWW-Authenticate challenge.
 * `acrValues` is undefined when only freshness is asked (a new password login of any strength).
 */
export class StepUpRequired extends ServiceError {
  constructor(
    description: string,
    readonly acrValues: string | undefined,
    readonly maxAgeSeconds: number,
  ) {
    super('insufficient_user_authentication', description);
  }
}

/**
 * The one rule for sensitive calls (CONTRACT §10, §14): turning MFA off, removing a factor,
 * changing the default, adding a factor, reading or regenerating backup codes.
 */
export function createStepUp({ store, clock, maxAgeSeconds }: { store: Store; clock: Clock; maxAgeSeconds: number }) {
  /**
   * Throws 409 `mfa_not_enabled` while MFA is off, else `judgeSecondFactor`'s 401.
   */
  async function requireRecentSecondFactor(login: LoginProof): Promise<void> {
    const enabledAt = await store.factors.findMfaEnabledAt(login.userId);
    if (!enabledAt) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
    judgeSecondFactor(login, enabledAt);
  }

  /**
   * Whether `login` is the one that turned MFA on, at most STEP_UP_MAX_AGE ago: it began before
   * MFA was on, and turning it on ended every other such login (CONTRACT §14). It proved the new
   * factor as it added it, so it may create the first backup codes without signing in again.
   */
  async function isEnablingLogin(login: LoginProof): Promise<boolean> {
    const enabledAt = await store.factors.findMfaEnabledAt(login.userId);
    if (!enabledAt) return false;
    const enabledSeconds = Math.floor(enabledAt.getTime() / 1000);
    return (
      login.authTime <= enabledSeconds && Math.floor(clock.now().getTime() / 1000) - enabledSeconds <= maxAgeSeconds
    );
  }

  /**
   * CONTRACT §14: adding a factor is judged by the state it meets (`mfaEnabledAt`, read when the
   * call runs, for a request and for a verify alike). With MFA on it is a sensitive call; with MFA
   * off the login must still be fresh, so that a stolen old token cannot turn MFA on with the
   * thief's factor. Throws RFC 9470's 401 `insufficient_user_authentication`.
   */
  function judgeEnrolment(login: LoginProof, mfaEnabledAt: Date | undefined): void {
    if (mfaEnabledAt) {
      judgeSecondFactor(login, mfaEnabledAt);
      return;
    }
    const ageSeconds = ageOf(login);
    if (ageSeconds > maxAgeSeconds) {
      throw new StepUpRequired(
        `turning multifactor authentication on needs a login at most ${maxAgeSeconds} s old (this one is ${ageSeconds} s); log in again with your password`,
        undefined,
        maxAgeSeconds,
      );
    }
  }

  /**
   * Throws RFC 9470's 401 unless the login reached aal2 or better since MFA was last turned on at
   * `enabledAt` (a token from before re-enabling does not count, whatever its amr says) and at
   * most STEP_UP_MAX_AGE ago.
   */
  function judgeSecondFactor(login: LoginProof, enabledAt: Date): void {
    if (!meetsAcr(login.acr, SENSITIVE_ACR) || login.authTime < Math.floor(enabledAt.getTime() / 1000)) {
      throw new StepUpRequired(
        'this call needs a login with a second factor; log in again with acr_values=aal2',
        SENSITIVE_ACR,
        maxAgeSeconds,
      );
    }
    const ageSeconds = ageOf(login);
    if (ageSeconds > maxAgeSeconds) {
      throw new StepUpRequired(
        `this call needs a login at most ${maxAgeSeconds} s old (this one is ${ageSeconds} s); log in again with max_age=${maxAgeSeconds}`,
        SENSITIVE_ACR,
        maxAgeSeconds,
      );
    }
  }

  function ageOf(login: LoginProof): number {
    return Math.floor(clock.now().getTime() / 1000) - login.authTime;
  }

  /**
   * A change to how the user signs in (the password: CONTRACT §20) is judged as adding a factor
   * is: with MFA on, a recent second factor; with MFA off, a recent login. Throws RFC 9470's 401.
   */
  async function requireRecentLogin(login: LoginProof): Promise<void> {
    judgeEnrolment(login, await store.factors.findMfaEnabledAt(login.userId));
  }

  return { requireRecentSecondFactor, isEnablingLogin, judgeEnrolment, requireRecentLogin };
}

export type StepUp = ReturnType<typeof createStepUp>;
