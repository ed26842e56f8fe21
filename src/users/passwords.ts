import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { hashPassword } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { Sessions } from '../logins/sessions.js';
import type { LoginProof, StepUp } from '../logins/step-up.js';
import type { PasswordCheck } from '../oauth/password-check.js';
import type { Store } from '../store/store.js';
import { NO_PASSWORD_HASH } from './accounts.js';
import { requireAcceptablePassword } from './password-policy.js';

/** CONTRACT §19: the password may go once the account holds this many passkeys, so that losing one does not lock it out. */
const PASSKEYS_TO_GO_WITHOUT_PASSWORD = 2;

/**
 * A person's own password: changed, added to an account that had none, or removed from one that
 * signs in with passkeys. Each is a sensitive call (CONTRACT §14, §20) and ends every other login
 * and sign-in session of the user.
 */
export function createPasswords({
  store,
  passwords,
  stepUp,
  sessions,
  audit,
  clock,
}: {
  store: Store;
  passwords: PasswordCheck;
  stepUp: StepUp;
  sessions: Sessions;
  audit: AuditTrail;
  clock: Clock;
}) {
  /**
   * Sets a new password. An account that has one must give it (`current`): a wrong one is 400
   * `invalid_grant` and counts in the password throttle. Throws the step-up rule's 401, 400
   * `invalid_request` or `weak_password` for a password that may not be set (password-policy.ts).
   */
  async function changePassword(
    login: LoginProof,
    change: { current?: string; next: string },
    context: RequestContext,
  ): Promise<void> {
    await stepUp.requireRecentLogin(login);
    const user = await store.users.findUserById(login.userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    if (user.passwordHash !== NO_PASSWORD_HASH) {
      if (change.current === undefined) {
        throw new ServiceError('invalid_request', 'current_password is required to change the password');
      }
      await passwords.checkPassword(user.username, change.current, context);
    }
    await requireAcceptablePassword(change.next, user.username);
    const hash = await hashPassword(change.next);
    await replacePassword(login, hash, 'password_changed', context);
  }

  /**
   * Removes the password: the account signs in with its passkeys alone. Needs two passkeys (409
   * `too_few_passkeys` otherwise) and a recent second factor.
   */
  async function removePassword(login: LoginProof, context: RequestContext): Promise<void> {
    await stepUp.requireRecentSecondFactor(login);
    const user = await store.users.findUserById(login.userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    if (user.passwordHash === NO_PASSWORD_HASH) throw new ServiceError('no_password', 'this account has no password');
    const passkeys = user.factors.filter((factor) => factor.type === 'webauthn').length;
    if (passkeys < PASSKEYS_TO_GO_WITHOUT_PASSWORD) {
      throw new ServiceError(
        'too_few_passkeys',
        `an account without a password needs at least ${PASSKEYS_TO_GO_WITHOUT_PASSWORD} passkeys (this one has ${passkeys}); add another first`,
      );
    }
    await replacePassword(login, NO_PASSWORD_HASH, 'password_removed', context);
  }

  async function replacePassword(
    login: LoginProof,
    hash: string,
    event: 'password_changed' | 'password_removed',
    context: RequestContext,
  ): Promise<void> {
    const now = clock.now();
    await store.transaction(async (tx) => {
      await tx.factors.lockUserMfa(login.userId);
      if (!(await tx.users.setPasswordHash(login.userId, hash))) {
        throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
      }
      await sessions.endUserSessions(tx, login.userId, now, login.sessionId);
      await audit.record(event, 'succeeded', { userId: login.userId, context }, tx);
    });
  }

  /** Whether the user has a password (an account may sign in with passkeys alone: CONTRACT §19). */
  async function hasPassword(userId: string): Promise<boolean> {
    const user = await store.users.findUserById(userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    return user.passwordHash !== NO_PASSWORD_HASH;
  }

  return { changePassword, removePassword, hasPassword };
}

export type Passwords = ReturnType<typeof createPasswords>;
