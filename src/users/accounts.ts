import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { hashPassword } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../logins/sessions.js';
import type { Store } from '../store/store.js';
import { requireAcceptablePassword } from './password-policy.js';

/** Usernames: 1 to 150 of letters, digits and @.+_- (emails fit). */
export const USERNAME_PATTERN = '^[A-Za-z0-9@.+_-]{1,150}$';
/** What an account without a password holds where the hash would be: no password matches it. */
export const NO_PASSWORD_HASH = '';

/** Usernames are compared without case: `Alice` and `alice` are one account (and one throttle). */
export function foldUsername(username: string): string {
  return username.toLowerCase();
}

/** User accounts, made and reset by the operator. */
export function createAccounts({
  store,
  clock,
  audit,
  sessions,
}: {
  store: Store;
  clock: Clock;
  audit: AuditTrail;
  sessions: Sessions;
}) {
  /**
   * Creates the user with an Argon2id password hash, keeping the username's spelling, or without a
   * password (CONTRACT §19: the account signs in with passkeys, the first made from an invite);
   * throws 400 `invalid_request`, 400 `weak_password`, 409 `username_taken` (also for the same
   * name in another case).
   */
  async function createUser(username: string, password?: string): Promise<{ id: string; username: string }> {
    if (!new RegExp(USERNAME_PATTERN).test(username)) {
      throw new ServiceError('invalid_request', 'username must be 1 to 150 letters, digits or @.+_-');
    }
    if (password !== undefined) await requireAcceptablePassword(password, username);
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

  /**
   * The operator sets the user's password (CONTRACT §20): every login and sign-in session of the
   * user ends, none spared, as the operator may be acting because the old one leaked. Throws 404
   * `not_found`, 400 `invalid_request` or `weak_password`.
   */
  async function setPassword(userId: string, password: string, context?: RequestContext): Promise<void> {
    const user = await getUserById(userId);
    await requireAcceptablePassword(password, user.username);
    const hash = await hashPassword(password);
    const now = clock.now();
    await store.transaction(async (tx) => {
      // Behind the user's row, as every change that ends logins (CONTRACT §14).
      await tx.factors.lockUserMfa(userId);
      if (!(await tx.users.setPasswordHash(userId, hash))) throw new ServiceError('not_found', 'no user has this id');
      await sessions.endUserSessions(tx, userId, now);
      await audit.record('password_changed', 'set_by_operator', { userId, context }, tx);
    });
  }

  /** Deletes the user with everything of theirs: factors, codes, tokens; throws 404 `not_found`. */
  async function deleteUser(userId: string): Promise<void> {
    // One transaction: the user's row and the count of users with MFA on go together.
    if (!(await store.transaction((tx) => tx.users.deleteUser(userId)))) {
      throw new ServiceError('not_found', 'no such user');
    }
    await audit.record('user_deleted', 'succeeded', { userId });
  }

  /**
   * CONTRACT §21: an operator ends every login, browser sign-in and remembered device of the user
   * (the user's session generation moves on), without touching their factors. Throws 404 `not_found`.
   */
  async function endSessions(userId: string): Promise<void> {
    await getUserById(userId);
    const now = clock.now();
    await store.transaction(async (tx) => {
      await sessions.endUserSessions(tx, userId, now);
      await audit.record('logout', 'ended_by_operator', { userId }, tx);
    });
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
    setPassword,
    deleteUser,
    endSessions,
    setOperator,
    /** A page of users with their factors' types, after the username key `after` (see mfa-factors.ts). */
    listUsers: (page: { after?: string; limit: number }) => store.factors.listUsersWithFactors(page),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
