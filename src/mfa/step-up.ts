import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

/** How the caller's login was proved, from its access token. */
export interface LoginProof {
  userId: string;
  /** RFC 8176 methods: ["pwd"], or ["pwd", <a second factor>]. */
  amr: readonly string[];
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

/** What a sensitive call asks of the login (RFC 9470 §3): a second factor, at most this old. */
export const SENSITIVE_ACR: Acr = 'aal2';
export const SENSITIVE_MAX_AGE_SECONDS = 600;

/** RFC 9470's 401: the login must be stepped up; the handler adds its WWW-Authenticate challenge. */
export class StepUpRequired extends ServiceError {
  constructor(
    description: string,
    readonly acrValues: string = SENSITIVE_ACR,
    readonly maxAgeSeconds: number = SENSITIVE_MAX_AGE_SECONDS,
  ) {
    super('insufficient_user_authentication', description);
  }
}

/**
 * The one rule for sensitive calls (CONTRACT §10, §14): turning MFA off, removing a factor,
 * changing the default, adding a factor while MFA is on, reading or regenerating backup codes.
 */
export function createStepUp({ store, clock }: { store: Store; clock: Clock }) {
  /**
   * Throws 409 `mfa_not_enabled` while MFA is off, and RFC 9470's 401
   * `insufficient_user_authentication` unless the login reached aal2 or better since MFA was last
   * turned on (a token from before re-enabling does not count, whatever its amr says) and at most
   * 10 minutes ago.
   */
  async function requireRecentSecondFactor(login: LoginProof): Promise<void> {
    const enabledAt = await store.factors.findMfaEnabledAt(login.userId);
    if (!enabledAt) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
    if (!meetsAcr(acrOf(login.amr), SENSITIVE_ACR) || login.authTime < Math.floor(enabledAt.getTime() / 1000)) {
      throw new StepUpRequired('this call needs a login with a second factor; log in again with acr_values=aal2');
    }
    const ageSeconds = Math.floor(clock.now().getTime() / 1000) - login.authTime;
    if (ageSeconds > SENSITIVE_MAX_AGE_SECONDS) {
      throw new StepUpRequired(
        `this call needs a login at most ${SENSITIVE_MAX_AGE_SECONDS} s old (this one is ${ageSeconds} s); log in again with max_age=${SENSITIVE_MAX_AGE_SECONDS}`,
      );
    }
  }

  return { requireRecentSecondFactor };
}

export type StepUp = ReturnType<typeof createStepUp>;
