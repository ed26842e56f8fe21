import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { deriveKey, keyedHash, randomDigits, randomToken, safeEqual, sha256 } from '../../src/crypto/secrets.js';

describe('randomDigits', () => {
  test('randomDigits(6) is exactly six ASCII digits', () => {
    for (let draw = 0; draw < 200; draw++) assert.match(randomDigits(6), /^[0-9]{6}$/);
    assert.match(randomDigits(12), /^[0-9]{12}$/);
  });

  test('over 2000 draws every position takes all 10 digits, each about as often as the others', () => {
    const DRAWS = 2000;
    const counts = Array.from({ length: 6 }, () => new Array<number>(10).fill(0));
    const seen = new Set<string>();
    for (let draw = 0; draw < DRAWS; draw++) {
      const code = randomDigits(6);
      seen.add(code);
      for (let position = 0; position < 6; position++) {
        const row = counts[position];
        const digit = Number(code[position]);
        if (row) row[digit] = (row[digit] ?? 0) + 1;
      }
    }
    for (const [position, row] of counts.entries()) {
      // Expected 200 per digit (standard deviation about 13); 100..320 fails only for a broken generator.
      for (const [digit, count] of row.entries()) {
        assert.ok(count >= 100 && count <= 320, `position ${position}, digit ${digit}: ${count} of ${DRAWS}`);
      }
    }
    // About 2 repeats are expected among 2000 draws from a million codes; many more means little entropy.
    assert.ok(seen.size >= DRAWS - 15, `${DRAWS - seen.size} repeated codes`);
  });
});

describe('keyedHash', () => {
  const key = randomBytes(32);

  test('is deterministic for the same key and parts', () => {
    assert.equal(keyedHash(key, 'code-id', '123456'), keyedHash(Buffer.from(key), 'code-id', '123456'));
  });

  test('differs by key', () => {
    assert.notEqual(keyedHash(key, 'code-id', '123456'), keyedHash(randomBytes(32), 'code-id', '123456'));
  });

  test('differs by part boundaries, not only by the concatenated text', () => {
    assert.notEqual(keyedHash(key, 'ab', 'c'), keyedHash(key, 'a', 'bc'));
    assert.notEqual(keyedHash(key, 'abc'), keyedHash(key, 'ab', 'c'));
    assert.notEqual(keyedHash(key, 'a', ''), keyedHash(key, 'a'));
    assert.notEqual(keyedHash(key, 'a1:b'), keyedHash(key, 'a', 'b'));
  });

  test('differs by every part and by their order', () => {
    const base = keyedHash(key, 'code-id', '123456');
    assert.notEqual(keyedHash(key, 'code-id', '123457'), base);
    assert.notEqual(keyedHash(key, 'code-jd', '123456'), base);
    assert.notEqual(keyedHash(key, '123456', 'code-id'), base);
  });

  test('is an opaque 256-bit value that does not contain its input', () => {
    const hash = keyedHash(key, 'code-id', '123456');
    assert.match(hash, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(hash, 'base64url').length, 32);
    assert.ok(!hash.includes('123456'));
    assert.notEqual(hash, sha256('123456'), 'keyed, not a plain hash');
  });
});

describe('sha256', () => {
  test('is the base64url SHA-256 (the empty string vector)', () => {
    assert.equal(sha256(''), '47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
    assert.notEqual(sha256('a'), sha256('b'));
  });
});

describe('safeEqual', () => {
  test('is true for equal strings and false for different ones', () => {
    assert.equal(safeEqual('same secret', 'same secret'), true);
    assert.equal(safeEqual('', ''), true);
    assert.equal(safeEqual('héllo ✓', 'héllo ✓'), true);
    assert.equal(safeEqual('same secret', 'same secreT'), false);
    assert.equal(safeEqual('123456', '123457'), false);
    assert.equal(safeEqual('a', 'b'), false);
  });

  test('compares strings of different lengths without throwing, answering false', () => {
    assert.equal(safeEqual('short', 'a much longer string'), false);
    assert.equal(safeEqual('', 'x'), false);
    assert.equal(safeEqual('prefix', 'prefix-and-more'), false);
  });
});

describe('deriveKey', () => {
  const secret = 'a service secret of at least thirty-two characters';

  test('is 32 bytes, and the same for the same secret and purpose', () => {
    const key = deriveKey(secret, 'one-time-code-hash');
    assert.ok(Buffer.isBuffer(key));
    assert.equal(key.length, 32);
    assert.deepEqual(deriveKey(secret, 'one-time-code-hash'), key);
    assert.deepEqual(deriveKey(Buffer.from(secret), 'one-time-code-hash'), key, 'a string and its bytes agree');
  });

  test('differs by purpose and by secret', () => {
    const key = deriveKey(secret, 'one-time-code-hash');
    assert.notDeepEqual(deriveKey(secret, 'signing-key-encryption'), key);
    assert.notDeepEqual(deriveKey(`${secret}!`, 'one-time-code-hash'), key);
  });

  test('is not the secret itself', () => {
    const secretBytes = randomBytes(32);
    assert.notDeepEqual(deriveKey(secretBytes, 'one-time-code-hash'), secretBytes);
  });
});

describe('randomToken', () => {
  test('randomToken(32) is 43 base64url characters carrying 32 bytes', () => {
    const token = randomToken(32);
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(token, 'base64url').length, 32);
  });

  test('defaults to 32 bytes and never repeats', () => {
    assert.match(randomToken(), /^[A-Za-z0-9_-]{43}$/);
    const tokens = new Set(Array.from({ length: 1000 }, () => randomToken()));
    assert.equal(tokens.size, 1000);
  });

  test('other sizes: 16 bytes are 22 characters, 64 bytes 86', () => {
    assert.match(randomToken(16), /^[A-Za-z0-9_-]{22}$/);
    assert.match(randomToken(64), /^[A-Za-z0-9_-]{86}$/);
  });
});
