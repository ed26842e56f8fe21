import { randomUUID } from 'node:crypto';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { hashPassword, MAX_PASSWORD_LENGTH } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

/** Usernames: 1 to 150 of letters, digits and @.+_- (emails fit). */
export const USERNAME_PATTERN = '^[A-Za-z0-9@.+_-]{1,150}$';
/** NIST SP 800-63B's minimum; the maximum keeps Argon2 input bounded. */
export const PASSWORD_LENGTH = { min: 8, max: MAX_PASSWORD_LENGTH } as const;

/** User accounts, made and reset by the operator. */
export function createAccounts({ store, clock, audit }: { store: Store; clock: Clock; audit: AuditTrail }) {
  /** Creates the user with an Argon2id password hash; throws 400 `invalid_request`, 409 `username_taken`. */
  async function createUser(username: string, password: string): Promise<{ id: string; username: string }> {
    if (!new RegExp(USERNAME_PATTERN).test(username)) {
      throw new ServiceError('invalid_request', 'username must be 1 to 150 letters, digits or @.+_-');
    }
    if ([...password].length < PASSWORD_LENGTH.min || [...password].length > PASSWORD_LENGTH.max) {
      throw new ServiceError('invalid_request', 'password must be 8 to 1024 characters');
    }
    const user = { id: randomUUID(), username, passwordHash: await hashPassword(password) };
    if (!(await store.users.insertUser(user, clock.now()))) {
      throw new ServiceError('username_taken', 'a user with this username exists');
    }
    return { id: user.id, username };
  }

  /** Turns the user's MFA off and drops phone, codes and backup codes (the user lost the phone). */
  async function resetMfa(username: string): Promise<{ wasEnabled: boolean }> {
    const user = await store.users.findUserByUsername(username);
    if (!user) throw new ServiceError('not_found', 'no such user');
    const wasEnabled = (await store.mfa.findMfa(user.id))?.isEnabled ?? false;
    await store.transaction(async (tx) => {
      await tx.mfa.deleteMfa(user.id);
      await tx.codes.deleteCodes(user.id);
      await tx.backupCodes.deleteBackupCodes(user.id);
    });
    await audit.record('mfa_disabled', 'reset_by_operator', { userId: user.id });
    return { wasEnabled };
  }

  return { createUser, resetMfa, listUsers: () => store.mfa.listUsersWithMfa() };
}

export type Accounts = ReturnType<typeof createAccounts>;
