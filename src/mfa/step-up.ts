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
 * The one rule for sensitive calls (CONTRACT §10): turning MFA off, removing a factor, changing
 * the default, adding a factor while MFA is on, reading or regenerating backup codes.
 */
export function createStepUp({ store }: { store: Store }) {
  /**
   * Throws 409 `mfa_not_enabled` while MFA is off, and 403 `insufficient_user_authentication`
   * unless the login proved a second factor since MFA was last turned on: a token from before
   * (re-)enabling does not count, whatever its amr says.
   */
  async function requireSecondFactor(login: LoginProof): Promise<void> {
    const enabledAt = await store.factors.findMfaEnabledAt(login.userId);
    if (!enabledAt) throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
    const hasSecondFactor = login.amr.some((method) => method !== 'pwd');
    if (!hasSecondFactor || login.authTime < Math.floor(enabledAt.getTime() / 1000)) {
      throw new ServiceError(
        'insufficient_user_authentication',
        'this call needs a login that used a second factor; log in again with one',
      );
    }
  }

  return { requireSecondFactor };
}

export type StepUp = ReturnType<typeof createStepUp>;
