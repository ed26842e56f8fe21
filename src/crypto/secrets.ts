import { createHash, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** A string of `length` decimal digits, each drawn from the CSPRNG without bias. */
export function randomDigits(length: number): string {
  let digits = '';
  while (digits.length < length) digits += String(randomInt(0, 10));
  return digits;
}

/** An opaque token with `bytes` random bytes, base64url-encoded (32 bytes = 256 bits). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** HMAC-SHA-256 of the parts; used for short secrets (codes), which a plain hash would not protect. */
export function keyedHash(key: Buffer, ...parts: string[]): string {
  const hmac = createHmac('sha256', key);
  for (const part of parts) hmac.update(`${part.length}:${part}`);
  return hmac.digest('base64url');
}

/** SHA-256, enough for long random secrets (refresh tokens, client secrets). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** Compares two strings in time that depends on neither's content (nor on where they differ). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** A 32-byte key for one purpose, derived from the service's secret (RFC 5869 HKDF). */
export function deriveKey(secret: string | Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'mfa-service', purpose, 32));
}
