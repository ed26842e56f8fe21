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

/** What an account without a password holds where the hash would be: no password matches it. */
export const NO_PASSWORD_HASH = '';

/** Throws 400 `invalid_request` saying why, unless `password` may be set. */
export function requireAcceptablePassword(password: string): void {
  // A lone surrogate has no UTF-8 form: hashed, it would become U+FFFD and match other passwords.
  if (!password.isWellFormed()) {
    throw new ServiceError(
      'invalid_request',
      'password must be well-formed Unicode (it holds a lone surrogate, half of a character); send the whole character',
    );
  }
  const length = [...password.normalize('NFC')].length;
  if (length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max) {
    throw new ServiceError('invalid_request', 'password must be 8 to 1024 characters');
  }
}

/** Usernames are compared without case: `Alice` and `alice` are one account (and one throttle). */
export function foldUsername(username: string): string {
  return username.toLowerCase();
}

/** User accounts, made and reset by the operator. */
export function createAccounts({ store, clock, audit }: { store: Store; clock: Clock; audit: AuditTrail }) {
  /**
   * Creates the user with an Argon2id password hash, keeping the username's spelling, or without a
   * password (CONTRACT §19: the account signs in with passkeys, the first made from an invite);
   * throws 400 `invalid_request`, 409 `username_taken` (also for the same name in another case).
   */
  async function createUser(username: string, password?: string): Promise<{ id: string; username: string }> {
    if (!new RegExp(USERNAME_PATTERN).test(username)) {
      throw new ServiceError('invalid_request', 'username must be 1 to 150 letters, digits or @.+_-');
    }
    if (password !== undefined) requireAcceptablePassword(password);
    const user = {
      id: randomUUID(),
      username,
      usernameKey: foldUsername(username),
      passwordHash: password === undefined ? NO_PASSWORD_HASH : await hashPassword(password),
    };
    if (!(await store.users.insertUser(user, clock.now()))) {
      throw new ServiceError('username_taken', 'a user with this username exists (usernames ignore case)');
    }
    return { id: user.id, username };
  }

  /** The user with this username (in any case), or throws 404 `not_found`. */
  async function getUser(username: string) {
    const user = await store.users.findUserByUsername(username, foldUsername(username));
    if (!user) throw new ServiceError('not_found', `no user is called "${username}"`);
    return user;
  }

  /** The user with this id, or throws 404 `not_found`. */
  async function getUserById(userId: string) {
    const user = await store.users.findUserById(userId);
    if (!user) throw new ServiceError('not_found', 'no user has this id');
    return user;
  }

  /** Deletes the user with everything of theirs: factors, codes, tokens; throws 404 `not_found`. */
  async function deleteUser(userId: string): Promise<void> {
    if (!(await store.users.deleteUser(userId))) throw new ServiceError('not_found', 'no such user');
    await audit.record('user_deleted', 'succeeded', { userId });
  }

  /**
   * CONTRACT §21: grants or revokes the operator role (the admin API with the user's own access
   * token). Audited; the role counts from the next request, so a revocation stops them at once.
   */
  async function setOperator(userId: string, operator: boolean): Promise<void> {
    if (!(await store.users.setOperator(userId, operator))) throw new ServiceError('not_found', 'no user has this id');
    await audit.record(operator ? 'operator_granted' : 'operator_revoked', 'succeeded', { userId });
  }

  return {
    createUser,
    getUser,
    getUserById,
    deleteUser,
    setOperator,
    listUsers: () => store.factors.listUsersWithFactors(),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
