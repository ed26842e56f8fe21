import { createRequire } from 'node:module';
import { MAX_PASSWORD_LENGTH } from '../crypto/passwords.js';
import { ServiceError } from '../errors.js';

/** NIST SP 800-63B §5.1.1.2's minimum; the maximum keeps Argon2 input bounded. */
export const PASSWORD_LENGTH = { min: 8, max: MAX_PASSWORD_LENGTH } as const;

/**
 * A username shorter than this is not looked for inside a password: "al" inside "totally
 * unrelated words" is chance, not the username.
 */
const MIN_USERNAME_LENGTH_TO_FIND = 4;

let commonPasswords: string | undefined;

/**
 * The common and breached passwords of zxcvbn-ts' common dictionary (about 49,000, drawn from breach
 * corpora), lower-cased, each once, sorted and joined into one string, each entry between newlines:
 * 0.4 MB of heap, where a `Set` of them beside the package's module kept 3.7 MB (docs/PERFORMANCE.md).
 * Loaded on the first new password, not at start: most processes (the admin CLI, a node answering
 * logins) never need it. The package is loaded with require() and dropped from require's cache, so
 * that its arrays, other dictionaries and adjacency graphs are collected and only the string stays;
 * import() would keep them for the life of the process (in the module map, or in the bundle's chunk).
 */
function loadCommonPasswords(): string {
  if (commonPasswords === undefined) {
    const load = createRequire(import.meta.url);
    const cached = new Set(Object.keys(load.cache));
    const { dictionary } = load('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
    const folded = new Set(dictionary['passwords-common'].map((password) => password.toLowerCase()));
    for (const path of Object.keys(load.cache)) if (!cached.has(path)) delete load.cache[path];
    const sorted = [...folded].sort();
    // An entry holding a newline would be read as two by isListed: refuse to check instead.
    if (sorted.some((password) => password.includes('\n'))) throw new Error('a common password holds a newline');
    commonPasswords = `\n${sorted.join('\n')}\n`;
  }
  return commonPasswords;
}

/** Whether `word` is an entry of `list` (sorted entries, each between newlines): a binary search. */
function isListed(list: string, word: string): boolean {
  // `low` and `high` are the newlines around the entries still to search.
  let low = 0;
  let high = list.length - 1;
  while (low < high) {
    const before = list.lastIndexOf('\n', (low + high) >>> 1);
    const after = list.indexOf('\n', before + 1);
    const entry = list.slice(before + 1, after);
    if (entry === word) return true;
    if (entry < word) low = after;
    else high = before;
  }
  return false;
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
  if (isListed(loadCommonPasswords(), folded)) {
    throw new ServiceError(
      'weak_password',
      'this password is one of the most common ones (it appears in breach lists); choose a longer phrase of unrelated words',
    );
  }
}
