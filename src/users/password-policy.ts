import { MAX_PASSWORD_LENGTH } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';

/** NIST SP 800-63B §5.1.1.2's minimum; the maximum keeps Argon2 input bounded. */
export const PASSWORD_LENGTH = { min: 8, max: MAX_PASSWORD_LENGTH } as const;

/**
 * A username shorter than this is not looked for inside a password: "al" inside "totally
 * unrelated words" is chance, not the username.
 */
const MIN_USERNAME_LENGTH_TO_FIND = 4;

let commonPasswords: Promise<ReadonlySet<string>> | undefined;

/**
 * The common and breached passwords of zxcvbn-ts' common dictionary (about 49,000, drawn from breach
 * corpora), lower-cased. Loaded on the first new password, not at start: it costs about 100 ms
 * and most processes (the admin CLI, a node answering logins) never need it.
 */
function loadCommonPasswords(): Promise<ReadonlySet<string>> {
  commonPasswords ??= import('@zxcvbn-ts/language-common').then((loaded) => {
    // A CommonJS package: its module.exports is `default` both in Node and in the esbuild bundle
    // (dist/), which names no other export.
    const { dictionary } = loaded.default;
    return new Set(dictionary['passwords-common'].map((password) => password.toLowerCase()));
  });
  return commonPasswords;
}

/**
 * CONTRACT §20 and NIST SP 800-63B §5.1.1.2, for every password a person or an operator sets:
 * 8 to 1024 characters (code points), not a common or breached password, not the username nor
 * containing it. Throws 400 `invalid_request` for a password that is malformed or of the wrong
 * length, 400 `weak_password` saying why and what to choose instead.
 */
export async function requireAcceptablePassword(password: string, username: string): Promise<void> {
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
  const folded = password.normalize('NFC').toLowerCase();
  const name = username.toLowerCase();
  if (folded === name || (name.length >= MIN_USERNAME_LENGTH_TO_FIND && folded.includes(name))) {
    throw new ServiceError(
      'weak_password',
      'this password is or contains the username, the first thing an attacker tries; choose a phrase of unrelated words instead',
    );
  }
  if ((await loadCommonPasswords()).has(folded)) {
    throw new ServiceError(
      'weak_password',
      'this password is one of the most common ones (it appears in breach lists); choose a longer phrase of unrelated words',
    );
  }
}
