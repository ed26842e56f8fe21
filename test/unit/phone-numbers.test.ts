import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { parsePhoneNumber } from '../../src/mfa/phone-numbers.js';

/** assert.throws matcher: a ServiceError `invalid_request`. */
function invalidRequest(error: unknown) {
  assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${String(error)}`);
  assert.equal(error.code, 'invalid_request');
  assert.equal(typeof error.description, 'string');
  return true;
}

describe('parsePhoneNumber', () => {
  test('accepts US, GB, FR and DE numbers and answers their E.164 form and country', () => {
    const cases = [
      { digits: '14155552671', country: 'US' },
      { digits: '12025550123', country: 'US' },
      { digits: '447400123456', country: 'GB' },
      { digits: '442071838750', country: 'GB' },
      { digits: '33612345678', country: 'FR' },
      { digits: '33123456789', country: 'FR' },
      { digits: '4915123456789', country: 'DE' },
      { digits: '4930123456', country: 'DE' },
    ];
    for (const { digits, country } of cases) {
      const parsed = parsePhoneNumber(digits);
      assert.equal(parsed.digits, digits);
      assert.equal(parsed.e164, `+${digits}`);
      assert.equal(parsed.country, country, `for ${digits}`);
    }
  });

  test('tells apart countries that share a calling code (US and CA under +1)', () => {
    assert.equal(parsePhoneNumber('14155552671').country, 'US');
    assert.equal(parsePhoneNumber('16135550123').country, 'CA');
  });

  test('accepts 7 digits (Niue) and 15 digits (Germany), the two ends of the allowed length', () => {
    const shortest = parsePhoneNumber('6834002');
    assert.equal(shortest.e164, '+6834002');
    assert.equal(shortest.country, 'NU');
    const longest = parsePhoneNumber('493012345678901');
    assert.equal(longest.e164, '+493012345678901');
    assert.equal(longest.country, 'DE');
  });

  test('refuses fewer than 7 or more than 15 digits', () => {
    for (const digits of ['', '1', '123456', '1234567890123456', '14155552671000000']) {
      assert.throws(() => parsePhoneNumber(digits), invalidRequest, `for "${digits}"`);
    }
  });

  test('refuses anything but digits: a plus, spaces, dashes, dots, brackets, letters, other scripts', () => {
    const bad = [
      '+14155552671',
      '1 415 555 2671',
      '1-415-555-2671',
      '1.415.555.2671',
      '1(415)5552671',
      '1415555267a',
      '14155552671\n',
      ' 14155552671',
      '١٤١٥٥٥٥٢٦٧١', // Arabic-Indic digits
      '１４１５５５５２６７１', // full-width digits
    ];
    for (const digits of bad)
      assert.throws(() => parsePhoneNumber(digits), invalidRequest, `for ${JSON.stringify(digits)}`);
  });

  test('refuses lengths that are impossible for the country', () => {
    const impossible = [
      '1415555267', // US: 9 national digits
      '14155552671234', // US: 13 national digits
      '44770090012345', // GB: 12 national digits
      '3361234567', // FR: 8 national digits
      '336123456789', // FR: 10 national digits
    ];
    for (const digits of impossible) assert.throws(() => parsePhoneNumber(digits), invalidRequest, `for ${digits}`);
  });

  test('refuses an unknown country calling code (999)', () => {
    assert.throws(() => parsePhoneNumber('999123456789'), invalidRequest);
    assert.throws(() => parsePhoneNumber('9991234567'), invalidRequest);
  });

  test('refuses a number that only parses by dropping digits (a trunk 0 after +44)', () => {
    // libphonenumber reads +44 07700… as +44 7700…; storing it would send SMS to a number the user never typed.
    assert.throws(() => parsePhoneNumber('4407400123456'), invalidRequest);
  });
});
