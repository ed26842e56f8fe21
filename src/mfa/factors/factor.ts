import type { RequestContext } from '../../audit/audit-trail.js';
import type { Factor } from '../../store/mfa-factors.js';

/** Every kind of second factor, in the order the API names them. Adding one: a file in this folder and an entry here. */
export const FACTOR_TYPES = ['sms', 'totp', 'webauthn', 'email'] as const;
export type FactorType = (typeof FACTOR_TYPES)[number];

/**
 * RFC 8176 methods a second factor adds to the token's `amr`: 'sms', 'otp' (TOTP), 'hwk' (a passkey);
 * and 'email' (CONTRACT §20 names it; RFC 8176 has none for a code by mail).
 */
export type AuthMethod = 'sms' | 'otp' | 'hwk' | 'email';

/** What the password grant can carry for a factor to judge: a 6-digit `mfa_code`, or a WebAuthn assertion. */
export type ProofKind = 'code' | 'webauthn';

/** The proof itself: a code's digits, or the assertion (`AuthenticationResponseJSON`) as parsed JSON. */
export type Proof = string | Record<string, unknown>;

/** The user logging in, as the factors see them. */
export interface LoginUser {
  id: string;
  username: string;
}

/** What a login asking for this factor gets back, besides `mfa_required` and the type. */
export type Challenge = Record<string, unknown>;

/**
 * One kind of second factor. The password grant (through login-challenge.ts) only ever speaks
 * this interface; enrolment, which differs per kind, is each implementation's own.
 */
export interface SecondFactor {
  readonly type: FactorType;
  /** What a success adds to the token's amr. */
  readonly amr: AuthMethod;
  readonly proof: ProofKind;
  /** The most verified factors of this type one user may hold (CONTRACT §10). */
  readonly maxPerUser: number;
  /** Whether the hosted sign-in may take a person through adding one (email codes need a verified address first). */
  readonly canEnrolWhileSigningIn: boolean;
  /** Prepares the login's second step for the user's verified factors of this type: sends an SMS, or nothing. */
  challenge(user: LoginUser, factors: Factor[], context: RequestContext): Promise<Challenge>;
  /**
   * Judges the proof against the user's verified factors of this type; answers the factor that
   * accepted it, having spent what it accepted (a code, a step), or why not. Races are settled by
   * the store: of several requests with one proof, one succeeds.
   */
  check(user: LoginUser, factors: Factor[], proof: Proof, context: RequestContext): Promise<CheckResult>;
}

export type CheckResult =
  | { accepted: Factor }
  /** `applies`: false when the factor had nothing to check against (no SMS code pending, say). */
  | { refused: string; applies: boolean };

/** The factor implementations by type, built in app.ts. */
export type SecondFactors = Readonly<Record<FactorType, SecondFactor>>;

/** A factor's name: 1 to 64 printable characters, and no lone surrogate (UTF-8 cannot store one). */
export const FACTOR_NAME_PATTERN = '^[^\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}]{1,64}$';

/** The factor type a stored row names; throws for a type this version does not know. */
export function toFactorType(type: string | undefined): FactorType {
  const known = FACTOR_TYPES.find((candidate) => candidate === type);
  if (!known) throw new Error(`unknown factor type in the database: ${type}`);
  return known;
}
