import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const SEALED_PREFIX = 'sealed:v1:';

/** Thrown when a sealed value cannot be opened: the key is missing, or not the one it was sealed with. */
export class UnsealError extends Error {}

/**
 * Seals a secret for storage with AES-256-GCM under `key` (a random 96-bit IV each time, the tag
 * checked on opening); without a key it is stored as it is. `context` binds the sealed value to
 * what it is for, so that one sealed secret cannot be moved into another's place.
 */
export function seal(plaintext: string, key: Buffer | undefined, context = ''): string {
  if (!key) return plaintext;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** Opens what `seal` made; a value that was stored unsealed comes back as it is. Throws UnsealError. */
export function unseal(stored: string, key: Buffer | undefined, context = ''): string {
  if (!stored.startsWith(SEALED_PREFIX)) return stored;
  if (!key) throw new UnsealError('the value is sealed and no key was given');
  const raw = Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(raw.subarray(12, 28));
  try {
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    throw new UnsealError('the value cannot be opened with this key');
  }
}

/** True when `stored` is a sealed value. */
export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}
