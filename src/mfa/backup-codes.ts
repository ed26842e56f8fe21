import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { keyedHash, randomDigits } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { LoginProof, StepUp } from '../logins/step-up.js';
import type { Store } from '../store/store.js';

const SET_SIZE = 10;

export interface BackupCodeDeps {
  store: Store;
  stepUp: StepUp;
  clock: Clock;
  codeKey: Buffer;
  audit: AuditTrail;
}

/** Backup codes: 10 single-use 12-digit codes per user, shown once and kept as keyed hashes. */
export function createBackupCodes({ store, stepUp, clock, codeKey, audit }: BackupCodeDeps) {
  const hash = (userId: string, code: string) => keyedHash(codeKey, 'backup-code', userId, code);

  /**
   * A new set replacing any earlier one; needs MFA on and a login that carried the second factor,
   * or (issue 29: codes offered as soon as the first factor is added) the login that turned MFA on
   * moments ago, for the first set only.
   */
  async function regenerateBackupCodes(login: LoginProof, context: RequestContext): Promise<string[]> {
    const first = await createFirstSet(login, context);
    if (first) return first;
    await stepUp.requireRecentSecondFactor(login);
    return replaceSet(login.userId, context, () => Promise.resolve(true));
  }

  /**
   * The first set, for the login that just turned MFA on (the hosted sign-in offers it before going
   * back to the app); undefined for any other login, or when the user has codes already.
   */
  async function createFirstSet(login: LoginProof, context: RequestContext): Promise<string[] | undefined> {
    if (!(await stepUp.isEnablingLogin(login))) return undefined;
    const codes = await replaceSet(
      login.userId,
      context,
      async (tx) => (await tx.backupCodes.countUnusedBackupCodes(login.userId)) === 0,
    );
    return codes.length > 0 ? codes : undefined;
  }

  /** Replaces the user's set when `mayReplace` agrees, behind the MFA lock; answers the codes, or none. */
  async function replaceSet(
    userId: string,
    context: RequestContext,
    mayReplace: (tx: Store) => Promise<boolean>,
  ): Promise<string[]> {
    const codes = new Set<string>();
    while (codes.size < SET_SIZE) codes.add(randomDigits(12));
    const hashed = [...codes].map((code) => ({ id: randomUUID(), codeHash: hash(userId, code) }));
    const isReplaced = await store.transaction(async (tx) => {
      // Behind the lock, regenerations racing each other leave one set, and none outlives DELETE /mfa/.
      if (!(await tx.factors.lockUserMfa(userId))?.mfaEnabledAt) {
        throw new ServiceError('mfa_not_enabled', 'multifactor authentication is not on');
      }
      // Read behind the lock: of two first sets racing, one is made.
      if (!(await mayReplace(tx))) return false;
      await tx.backupCodes.replaceBackupCodes(userId, hashed, clock.now());
      await audit.record('backup_codes_regenerated', 'succeeded', { userId, context }, tx);
      return true;
    });
    return isReplaced ? [...codes] : [];
  }

  /** How many unused codes are left; same requirements as regenerating. */
  async function countRemaining(login: LoginProof): Promise<number> {
    await stepUp.requireRecentSecondFactor(login);
    return store.backupCodes.countUnusedBackupCodes(login.userId);
  }

  /** Spends the code if it is one of the user's unused ones (one conditional update); false otherwise. */
  async function spendBackupCode(userId: string, code: string, context: RequestContext): Promise<boolean> {
    return store.transaction(async (tx) => {
      const spent = await tx.backupCodes.spendBackupCode(userId, hash(userId, code), clock.now());
      await audit.record('backup_code_used', spent ? 'succeeded' : 'wrong', { userId, context }, tx);
      return spent;
    });
  }

  return { regenerateBackupCodes, createFirstSet, countRemaining, spendBackupCode };
}

export type BackupCodes = ReturnType<typeof createBackupCodes>;
