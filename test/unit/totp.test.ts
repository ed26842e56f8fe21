import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { base32, hotp, totpStep } from '../../src/crypto/totp.js';
import { otpauthUri } from '../../src/mfa/factors/totp.js';

// RFC 4226 Appendix D and RFC 6238 Appendix B: the secret is the ASCII of "12345678901234567890".
const RFC_SECRET = Buffer.from('12345678901234567890');

describe('HOTP and TOTP against the RFCs’ own test vectors', () => {
  test('RFC 4226 Appendix D: HOTP for counters 0 to 9', () => {
    const expected = [
      '755224',
      '287082',
      '359152',
      '969429',
      '338314',
      '254676',
      '287922',
      '162583',
      '399871',
      '520489',
    ];
    assert.deepEqual(
      expected.map((_, counter) => hotp(RFC_SECRET, counter)),
      expected,
    );
  });

  test('RFC 6238 Appendix B (SHA-1): the last 6 digits of the 8-digit values at each time', () => {
    const vectors: [number, string][] = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ];
    for (const [seconds, eightDigits] of vectors) {
      assert.equal(hotp(RFC_SECRET, totpStep(new Date(seconds * 1000))), eightDigits.slice(-6), `T = ${seconds}`);
    }
  });

  test('steps are 30 seconds from the epoch', () => {
    assert.equal(totpStep(new Date(0)), 0);
    assert.equal(totpStep(new Date(29_999)), 0);
    assert.equal(totpStep(new Date(30_000)), 1);
    assert.equal(totpStep(new Date(59_000)), 1);
  });
});

describe('base32', () => {
  test('RFC 4648 §10 test vectors, without padding', () => {
    const vectors: [string, string][] = [
      ['', ''],
      ['f', 'MY'],
      ['fo', 'MZXQ'],
      ['foo', 'MZXW6'],
      ['foob', 'MZXW6YQ'],
      ['fooba', 'MZXW6YTB'],
      ['foobar', 'MZXW6YTBOI'],
    ];
    for (const [input, encoded] of vectors) assert.equal(base32(Buffer.from(input)), encoded);
  });

  test('a 160-bit secret is 32 characters', () => {
    assert.equal(base32(Buffer.alloc(20, 0xff)), '7'.repeat(32));
  });
});

describe('otpauth URIs', () => {
  test('the Key Uri Format: issuer prefix, secret, issuer, SHA1, 6 digits, 30 s, all encoded', () => {
    assert.equal(
      otpauthUri('Acme Corp', 'alice@example.com', 'JBSWY3DPEHPK3PXP'),
      'otpauth://totp/Acme%20Corp:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Acme%20Corp&algorithm=SHA1&digits=6&period=30',
    );
  });
});
