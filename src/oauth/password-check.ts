import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import { verifyPassword } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { StoredUser } from '../store/users.js';
import { foldUsername } from '../users/accounts.js';
import type { LoginThrottle } from './login-throttle.js';

const WRONG_CREDENTIALS = 'the username or password is wrong';
const NO_PASSWORD = 'this account has no password: sign in with a passkey';

/**
 * The first step of every sign-in, the password grant's and the hosted page's alike: the user
 * whose password this is, counted in the throttles before Argon2 runs (simultaneous guesses cannot
 * all be judged; a wrong password leaves its count, a right one gives it back).
 */
export function createPasswordCheck({
  store,
  throttle,
  audit,
}: {
  store: Store;
  throttle: LoginThrottle;
  audit: AuditTrail;
}) {
  /**
   * The user, read with their verified factors. Throws 429 `login_throttled` while the username or
   * address must wait, and `invalid_grant` for a wrong password or an unknown user, with the same
   * words and about the same time (an unknown user is checked against a decoy hash).
   */
  async function checkPassword(username: string, password: string, context: RequestContext): Promise<StoredUser> {
    const user = await store.users.findUserByUsername(username, foldUsername(username));
    // The user, when there is one, is told of a throttle on their name (CONTRACT §20).
    const attempt = await throttle.reserveLogin(username, context, user?.id);
    // An account without a password (CONTRACT §19) is checked against the decoy, as an unknown one.
    const hash = user?.passwordHash || undefined;
    // A password that is not well-formed Unicode (a lone surrogate) was never set (CONTRACT §14),
    // and its UTF-8 bytes would match another's: it is wrong, without being hashed.
    const isRight = password.isWellFormed() && (await verifyPassword(hash, password));
    if (!isRight || !user) {
      await throttle.loginFailed(attempt);
      await audit.record('login', 'failed', { userId: user?.id, context, detail: { reason: 'password' } });
      // CONTRACT §19: such an account is told to use its passkey (it has no password to guess).
      if (user && !hash) throw new ServiceError('invalid_grant', NO_PASSWORD);
      throw new ServiceError('invalid_grant', WRONG_CREDENTIALS);
    }
    await throttle.loginSucceeded(attempt);
    return user;
  }

  return { checkPassword };
}

export type PasswordCheck = ReturnType<typeof createPasswordCheck>;
