import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { ServiceError } from '../errors.js';
import type { Factor } from '../store/mfa-factors.js';
import type { Store } from '../store/store.js';
import type { BackupCodes } from './backup-codes.js';
import {
  type Challenge,
  FACTOR_TYPES,
  type FactorType,
  type LoginUser,
  type SecondFactors,
  toFactorType,
} from './factors/factor.js';
import type { GuessBudget } from './guess-budget.js';

/** What the password grant carries besides the password. */
export interface SecondStep {
  /** The factor type the client asks for (CONTRACT §13); the default one otherwise. */
  mfaType?: string;
  mfaCode?: string;
  backupCode?: string;
}

export type LoginDecision =
  | { amr: string[]; factorType?: FactorType | 'backup' }
  | { challenge: { mfaType: FactorType; mfaTypes?: FactorType[] } & Challenge };

export interface LoginChallengeDeps {
  store: Store;
  factors: SecondFactors;
  backupCodes: BackupCodes;
  guesses: GuessBudget;
  audit: AuditTrail;
  clock: Clock;
}

/**
 * The one question the password grant asks once the password is right: "this user, this proof
 * (or none): tokens with which amr, or which challenge?" It never names a factor type.
 */
export function createLoginChallenge({ store, factors, backupCodes, guesses, audit, clock }: LoginChallengeDeps) {
  /**
   * Throws `invalid_request` for an `mfa_type` the user has not enrolled, `mfa_throttled` past the
   * guess budget, `invalid_grant` for a wrong proof.
   */
  async function decide(user: LoginUser, step: SecondStep, context: RequestContext): Promise<LoginDecision> {
    const verified = (await store.factors.listFactors(user.id)).filter((factor) => factor.status === 'verified');
    if (verified.length === 0) return { amr: ['pwd'] };
    const byType = new Map<FactorType, Factor[]>();
    for (const type of FACTOR_TYPES) {
      const ofType = verified.filter((factor) => factor.type === type);
      if (ofType.length > 0) byType.set(type, ofType);
    }
    const types = [...byType.keys()];
    const asked = step.mfaType === undefined ? undefined : types.find((type) => type === step.mfaType);
    if (step.mfaType !== undefined && !asked) {
      throw new ServiceError(
        'invalid_request',
        `mfa_type ${step.mfaType} is not enrolled for this user; send one of: ${types.join(', ')}`,
      );
    }

    if (step.backupCode !== undefined) {
      await guesses.reserveGuess(user.id, context);
      if (!(await backupCodes.spendBackupCode(user.id, step.backupCode, context))) {
        throw new ServiceError('invalid_grant', 'backup_code: the code is wrong or already used');
      }
      await guesses.guessSucceeded(user.id);
      return { amr: ['pwd', 'backup'], factorType: 'backup' };
    }

    if (step.mfaCode !== undefined) {
      await guesses.reserveGuess(user.id, context);
      const refusals: { refused: string; applies: boolean }[] = [];
      // The factor asked for first: a TOTP code need not spend an attempt of a pending SMS code.
      const order = [...types].sort((a, b) => Number(b === asked) - Number(a === asked));
      for (const type of order) {
        const ofType = byType.get(type) ?? [];
        const factor = factors[type];
        if (factor.proof !== 'code') continue;
        const result = await factor.check(user, ofType, step.mfaCode, context);
        if ('accepted' in result) {
          await guesses.guessSucceeded(user.id);
          await store.factors.markFactorUsed(result.accepted.id, clock.now());
          return { amr: ['pwd', factor.amr], factorType: type };
        }
        refusals.push(result);
      }
      const reason = refusals.find((refusal) => refusal.applies) ?? refusals[0];
      throw new ServiceError('invalid_grant', `mfa_code: ${reason?.refused ?? 'the code is wrong'}`);
    }

    const chosen = asked ?? defaultType(verified);
    const challenge = await factors[chosen].challenge(user, byType.get(chosen) ?? [], context);
    await audit.record('login', 'mfa_required', { userId: user.id, context, detail: { factor_type: chosen } });
    return { challenge: { ...challenge, mfaType: chosen, ...(types.length > 1 ? { mfaTypes: types } : {}) } };
  }

  return { decide };
}

export type LoginChallenge = ReturnType<typeof createLoginChallenge>;

function defaultType(verified: Factor[]): FactorType {
  return toFactorType((verified.find((factor) => factor.isDefault) ?? verified[0])?.type);
}
