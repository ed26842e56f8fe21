import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import { ACR_VALUES, type Acr, acrOf, meetsAcr } from '../logins/step-up.js';
import type { Factor } from '../store/mfa-factors.js';
import type { Store } from '../store/store.js';
import type { BackupCodes } from './backup-codes.js';
import {
  type Challenge,
  FACTOR_TYPES,
  type FactorType,
  type LoginUser,
  type Proof,
  type ProofKind,
  type SecondFactors,
  toFactorType,
} from './factors/factor.js';
import type { GuessBudget } from './guess-budget.js';

/** What a token request carries besides the password. */
export interface SecondStep {
  /** The factor type the client asks for (CONTRACT §13); the default one otherwise. */
  mfaType?: string;
  mfaCode?: string;
  backupCode?: string;
  /** A WebAuthn assertion (`AuthenticationResponseJSON`), parsed. */
  webauthnResponse?: Record<string, unknown>;
  /** RFC 9470 §4 `acr_values`, in order of preference. */
  acrValues?: readonly string[];
  /** The fields the codes came in, for the answers to name: the password grant's unless given. */
  fieldNames?: { code: string; backupCode: string };
}

const PASSWORD_GRANT_FIELDS = { code: 'mfa_code', backupCode: 'backup_code' };

export type LoginDecision =
  | { amr: string[]; factorType?: FactorType | 'backup' }
  | {
      challenge: { mfaType: FactorType; mfaTypes?: FactorType[] } & Challenge;
      /** What the finished login must reach. */
      requiredAcr: Acr;
    };

export interface LoginChallengeDeps {
  store: Store;
  factors: SecondFactors;
  backupCodes: BackupCodes;
  guesses: GuessBudget;
  audit: AuditTrail;
  clock: Clock;
}

/**
 * The one question a login asks once the password is right: "this user, this proof (or none):
 * tokens with which amr, or which challenge?" It never names a factor type.
 */
export function createLoginChallenge({ store, factors, backupCodes, guesses, audit, clock }: LoginChallengeDeps) {
  /**
   * Decides on the user's verified `factors`, as read with the user. Throws `invalid_request` for
   * an `mfa_type` the user has not enrolled or `acr_values` the user cannot meet, `mfa_throttled`
   * past the guess budget, `invalid_grant` for a wrong proof.
   */
  async function decide(
    user: LoginUser & { factors: Factor[] },
    step: SecondStep,
    context: RequestContext,
  ): Promise<LoginDecision> {
    const byType = new Map<FactorType, Factor[]>();
    for (const type of FACTOR_TYPES) {
      const ofType = user.factors.filter((factor) => factor.type === type);
      if (ofType.length > 0) byType.set(type, ofType);
    }
    const enrolled = [...byType.keys()];
    // CONTRACT §13: a type the user has not enrolled is refused, with MFA on or off.
    const asked = step.mfaType === undefined ? undefined : enrolled.find((type) => type === step.mfaType);
    if (step.mfaType !== undefined && !asked) {
      throw new ServiceError(
        'invalid_request',
        enrolled.length === 0
          ? `mfa_type ${step.mfaType}: this user has no second factor; send no mfa_type`
          : `mfa_type ${step.mfaType} is not enrolled for this user; send one of: ${enrolled.join(', ')}`,
      );
    }
    const required = requiredAcr(enrolled, step.acrValues);
    if (required === 'aal1') return { amr: ['pwd'] };
    // The factors whose success reaches what is required (only passkeys for phr).
    const usable = enrolled.filter((type) => meetsAcr(acrOf(['pwd', factors[type].amr]), required));

    if (asked && !usable.includes(asked)) {
      throw new ServiceError(
        'invalid_request',
        `mfa_type ${asked} cannot reach acr ${required}; send one of: ${usable.join(', ')}`,
      );
    }

    const proof = proofOf(step);
    if (step.backupCode !== undefined) {
      if (!meetsAcr('aal2', required)) {
        throw new ServiceError(
          'invalid_request',
          `a backup code reaches aal2, not ${required}: use ${usable.join(', ')}`,
        );
      }
      const backupCode = step.backupCode;
      const isSpent = await guesses.judgeGuess(user.id, context, () =>
        backupCodes.spendBackupCode(user.id, backupCode, context),
      );
      if (!isSpent) {
        const field = (step.fieldNames ?? PASSWORD_GRANT_FIELDS).backupCode;
        throw new ServiceError('invalid_grant', `${field}: the code is wrong or already used`);
      }
      return { amr: ['pwd', 'backup'], factorType: 'backup' };
    }

    if (proof) {
      // The factor asked for first: a TOTP code need not spend an attempt of a pending SMS code.
      const judges = usable
        .filter((type) => factors[type].proof === proof.kind)
        .sort((a, b) => Number(b === asked) - Number(a === asked));
      if (judges.length === 0) {
        throw new ServiceError(
          'invalid_request',
          `no enrolled factor that takes ${proof.field} reaches acr ${required}; send the password alone to be told which factor does`,
        );
      }
      const refusals: { refused: string; applies: boolean }[] = [];
      const accepted = await guesses.judgeGuess(user.id, context, async () => {
        for (const type of judges) {
          const result = await factors[type].check(user, byType.get(type) ?? [], proof.value, context);
          if ('accepted' in result) return { type, factor: result.accepted };
          refusals.push(result);
        }
        return false;
      });
      if (!accepted) {
        const reason = refusals.find((refusal) => refusal.applies) ?? refusals[0];
        throw new ServiceError('invalid_grant', `${proof.field}: ${reason?.refused ?? 'the proof is wrong'}`);
      }
      await store.factors.markFactorUsed(accepted.factor.id, clock.now());
      return { amr: ['pwd', factors[accepted.type].amr], factorType: accepted.type };
    }

    const chosen = asked ?? defaultAmong(user, usable);
    const challenge = await factors[chosen].challenge(user, byType.get(chosen) ?? [], context);
    await audit.record('login', 'mfa_required', { userId: user.id, context, detail: { factor_type: chosen } });
    return {
      challenge: { ...challenge, mfaType: chosen, ...(usable.length > 1 ? { mfaTypes: usable } : {}) },
      requiredAcr: required,
    };
  }

  /**
   * The factor types of the user's that reach `acr`, the one a login would ask for first, and
   * whether there is any: what the second step offers, without sending or storing anything.
   */
  function offer(user: { factors: Factor[] }, acr: Acr): { mfaType: FactorType; mfaTypes: FactorType[] } | undefined {
    const usable = FACTOR_TYPES.filter(
      (type) => user.factors.some((factor) => factor.type === type) && meetsAcr(acrOf(['pwd', factors[type].amr]), acr),
    );
    if (usable.length === 0) return undefined;
    return { mfaType: defaultAmong(user, usable), mfaTypes: usable };
  }

  /** The user's default factor's type when it is among `usable`, else the first of them. */
  function defaultAmong(user: { factors: Factor[] }, usable: FactorType[]): FactorType {
    const byDefault = toFactorType((user.factors.find((factor) => factor.isDefault) ?? user.factors[0])?.type);
    return usable.includes(byDefault) ? byDefault : toFactorType(usable[0]);
  }

  /**
   * What the login must reach: the user's own policy (a second factor once they have one),
   * raised to the first of `acr_values` (RFC 9470 §4, in order of preference) they can meet.
   */
  function requiredAcr(enrolled: FactorType[], acrValues: readonly string[] | undefined): Acr {
    const policy: Acr = enrolled.length > 0 ? 'aal2' : 'aal1';
    if (acrValues === undefined || acrValues.length === 0) return policy;
    const reachable = (acr: Acr) =>
      acr === 'aal1' || enrolled.some((type) => meetsAcr(acrOf(['pwd', factors[type].amr]), acr));
    for (const value of acrValues) {
      const acr = ACR_VALUES.find((known) => known === value);
      if (acr && reachable(acr)) return meetsAcr(acr, policy) ? acr : policy;
    }
    throw new ServiceError(
      'invalid_request',
      `this user cannot meet acr_values "${acrValues.join(' ')}" with the factors enrolled (${enrolled.join(', ') || 'none'}); known values: ${ACR_VALUES.join(', ')}`,
    );
  }

  return { decide, offer };
}

export type LoginChallenge = ReturnType<typeof createLoginChallenge>;

/** Throws 400 `invalid_request` when the request carries more than one second-factor proof. */
export function requireOneProofAtMost(step: SecondStep): void {
  const given = [step.mfaCode, step.backupCode, step.webauthnResponse].filter((value) => value !== undefined);
  if (given.length > 1) {
    throw new ServiceError('invalid_request', 'send one of mfa_code, backup_code and webauthn_response, not several');
  }
}

/** The second-factor proof a request carries, with its kind and the field it came in. */
function proofOf(step: SecondStep): { kind: ProofKind; value: Proof; field: string } | undefined {
  requireOneProofAtMost(step);
  if (step.mfaCode !== undefined) {
    return { kind: 'code', value: step.mfaCode, field: (step.fieldNames ?? PASSWORD_GRANT_FIELDS).code };
  }
  if (step.webauthnResponse !== undefined) {
    return { kind: 'webauthn', value: step.webauthnResponse, field: 'webauthn_response' };
  }
  return undefined;
}
