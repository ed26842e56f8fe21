import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import {
  BLOCKABLE_LINE_TYPES,
  countryKeyOf,
  DEFAULT_BLOCKED_LINE_TYPES,
  PHONE_NUMBER_EXAMPLES,
  parsePhoneNumber,
  parseSmsDestination,
  rangeOf,
} from '../../src/mfa/phone-numbers.js';

/** assert.throws matcher: a ServiceError with this code whose description matches `described`. */
function refusedAs(code: string, described = /./) {
  return (error: unknown) => {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.match(error.description, described);
    return true;
  };
}
const invalidRequest = refusedAs('invalid_request');
const invalidNumber = refusedAs('invalid_phone_number');

describe('parsePhoneNumber', () => {
  test('the examples the messages give are valid numbers of the countries they are given for', () => {
    const examples = [...PHONE_NUMBER_EXAMPLES.matchAll(/"([0-9]+)" for a (US|UK) (?:number|one)/g)];
    assert.equal(examples.length, 2, PHONE_NUMBER_EXAMPLES);
    for (const [, digits = '', country] of examples) {
      const parsed = parseSmsDestination(digits, DEFAULT_BLOCKED_LINE_TYPES);
      assert.equal(parsed.isValid, true, digits);
      assert.equal(parsed.country, country === 'UK' ? 'GB' : country, digits);
    }
  });

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
    for (const digits of impossible) assert.throws(() => parsePhoneNumber(digits), invalidNumber, `for ${digits}`);
  });

  test('a US number without its country code: says which country the digits read as, and what to send', () => {
    assert.throws(
      () => parsePhoneNumber('4155552671'),
      refusedAs(
        'invalid_phone_number',
        /^phone_number reads as a number of Switzerland \(\+41\), where it is not a possible number; if the country code 1 was left out, send "14155552671" \(\+1 415 555 2671, United States\)$/,
      ),
    );
  });

  test('a number in its national form with a trunk 0, or after 00, is told to put the country code first', () => {
    for (const digits of ['07400123456', '00447400123456']) {
      assert.throws(
        () => parsePhoneNumber(digits),
        refusedAs(
          'invalid_phone_number',
          /^phone_number starts with 0, which no country code does; put the country code first, without 00 or a trunk 0, e\.g\. "14155552671"/,
        ),
        digits,
      );
    }
  });

  test('refuses an unknown country calling code (999)', () => {
    assert.throws(() => parsePhoneNumber('999123456789'), invalidNumber);
    assert.throws(() => parsePhoneNumber('9991234567'), invalidNumber);
  });

  test('refuses a number that only parses by dropping digits (a trunk 0 after +44)', () => {
    // libphonenumber reads +44 07700… as +44 7700…; storing it would send SMS to a number the user never typed.
    assert.throws(() => parsePhoneNumber('4407400123456'), invalidNumber);
  });

  test('still parses a possible number that is not valid, as a number verified before CONTRACT §15 may be', () => {
    const drama = parsePhoneNumber('447700900123');
    assert.equal(drama.isValid, false);
    assert.deepEqual(drama.possibleCountries, ['GB', 'GG', 'IM', 'JE']);
  });
});

describe('parseSmsDestination (CONTRACT §15: what may receive an enrolment code)', () => {
  const blockedByDefault = DEFAULT_BLOCKED_LINE_TYPES;

  test('accepts valid mobile and landline numbers, and answers their type', () => {
    const cases = [
      { digits: '14152000101', type: 'FIXED_LINE_OR_MOBILE' },
      { digits: '447400123456', type: 'MOBILE' },
      { digits: '442071838750', type: 'FIXED_LINE' },
      { digits: '4915123456789', type: 'MOBILE' },
      { digits: '2348031234567', type: 'MOBILE' },
    ];
    for (const { digits, type } of cases) {
      assert.equal(parseSmsDestination(digits, blockedByDefault).lineType, type, `for ${digits}`);
    }
  });

  test('refuses possible numbers that are not valid, saying so: +1 999 555 0123, +44 7700 900123, +49 900…', () => {
    for (const digits of ['19995550123', '447700900123', '4990012345678', '17005550123']) {
      assert.throws(
        () => parseSmsDestination(digits, blockedByDefault),
        refusedAs('invalid_phone_number', /not a valid number/),
        digits,
      );
    }
    assert.throws(
      () => parseSmsDestination('447700900123', blockedByDefault),
      refusedAs(
        'invalid_phone_number',
        /reads as a number of \+44, where no such range is assigned; check the country code/,
      ),
    );
    // Read as Egypt's +20, it is possible there but not valid; with a 1 it is a US number.
    assert.throws(
      () => parseSmsDestination('2025550123', blockedByDefault),
      refusedAs('invalid_phone_number', /Egypt \(\+20\).*send "12025550123" \(\+1 202 555 0123, United States\)$/),
    );
  });

  test('refuses by default premium-rate, shared-cost, toll-free, UAN, voicemail and pager numbers, naming the reason', () => {
    const cases = [
      { digits: '19005550123', reason: /premium-rate/ }, // US 1-900
      { digits: '448435551234', reason: /premium-rate/ }, // GB 0843 (service charge band)
      { digits: '33899123456', reason: /premium-rate/ }, // FR 0899
      { digits: '33810123456', reason: /shared-cost/ }, // FR 0810
      { digits: '491801234567', reason: /shared-cost/ }, // DE 0180
      { digits: '18005550123', reason: /toll-free/ }, // US 1-800
      { digits: '448001234567', reason: /toll-free/ }, // GB 0800
      { digits: '443370201788', reason: /universal access/ }, // GB 03
      { digits: '49163996506321', reason: /voicemail/ }, // DE mobile voicemail
      { digits: '447640123456', reason: /pager/ }, // GB 076
    ];
    for (const { digits, reason } of cases) {
      assert.throws(
        () => parseSmsDestination(digits, blockedByDefault),
        refusedAs('invalid_phone_number', reason),
        digits,
      );
    }
  });

  test('refuses by default numbers of no country: +881 satellite, +870 Inmarsat, +882 international networks', () => {
    for (const digits of ['8816123456789', '88216123456', '870773111632']) {
      assert.throws(
        () => parseSmsDestination(digits, blockedByDefault),
        refusedAs('invalid_phone_number', /no country/),
        digits,
      );
    }
  });

  test('the list is the caller’s: VoIP refused only when listed, and an empty list lets any valid number through', () => {
    const gbVoip = '445691958923';
    assert.equal(parseSmsDestination(gbVoip, blockedByDefault).lineType, 'VOIP');
    assert.throws(
      () => parseSmsDestination(gbVoip, [...blockedByDefault, 'VOIP']),
      refusedAs('invalid_phone_number', /VoIP/),
    );
    assert.equal(parseSmsDestination('19005550123', []).lineType, 'PREMIUM_RATE');
    assert.equal(parseSmsDestination('8816123456789', []).isNonGeographic, true);
    // A number of no country is still judged by its type when NON_GEOGRAPHIC is allowed.
    assert.throws(
      () => parseSmsDestination('979123456789', ['PREMIUM_RATE']),
      refusedAs('invalid_phone_number', /premium/),
    );
    // Validity is not on the list: an invalid number is refused whatever it says.
    assert.throws(() => parseSmsDestination('447700900123', []), invalidNumber);
  });

  test('every default type is a blockable one', () => {
    for (const type of DEFAULT_BLOCKED_LINE_TYPES) assert.ok(BLOCKABLE_LINE_TYPES.includes(type), type);
    assert.ok(!DEFAULT_BLOCKED_LINE_TYPES.includes('VOIP'), 'VoIP is allowed unless listed');
  });
});

describe('budget keys', () => {
  test('a number’s country is its ISO code (+1 numbers included), or +<calling code> for a network of no country', () => {
    assert.equal(countryKeyOf(parsePhoneNumber('14152000101')), 'US');
    assert.equal(countryKeyOf(parsePhoneNumber('16135550123')), 'CA');
    assert.equal(countryKeyOf(parsePhoneNumber('18762345678')), 'JM');
    assert.equal(countryKeyOf(parsePhoneNumber('8816123456789')), '+881');
  });

  test('a number’s range is every digit but the last two', () => {
    assert.equal(rangeOf(parsePhoneNumber('2348031234567')), '23480312345');
    assert.equal(rangeOf(parsePhoneNumber('6834002')), '68340');
  });
});
