import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { acceptedLanguages, CATALOGUES, LANGUAGES, pickLanguage, translate } from '../../src/i18n/messages.js';

// CONTRACT §22: every catalogue has every key of the English one, with the same placeholders, and
// an SMS stays within one segment in every language: 160 GSM-7 characters (those of the extension
// table count twice), or 70 UCS-2 code units when one character is outside GSM-7.

const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXTENSION = '^{}\\[~]|€\f';

/** How many segments of one SMS the text takes at most: 1 means it fits in one. */
function fitsOneSegment(text: string): boolean {
  const chars = [...text];
  if (chars.every((char) => GSM7_BASIC.includes(char) || GSM7_EXTENSION.includes(char))) {
    return chars.reduce((length, char) => length + (GSM7_EXTENSION.includes(char) ? 2 : 1), 0) <= 160;
  }
  return text.length <= 70;
}

const placeholders = (text: string) => [...text.matchAll(/\{\{(\w+)\}\}/g)].map((match) => match[1]).sort();

describe('message catalogues', () => {
  const reference = CATALOGUES.en as Record<string, string>;

  for (const language of LANGUAGES) {
    test(`${language}: every key of the English catalogue, no other, with the same placeholders`, () => {
      const catalogue = CATALOGUES[language] as Record<string, string>;
      assert.deepEqual(Object.keys(catalogue).sort(), Object.keys(reference).sort());
      for (const [key, text] of Object.entries(catalogue)) {
        assert.ok(text.trim().length > 0, `${language}.${key} is empty`);
        assert.deepEqual(placeholders(text), placeholders(reference[key] ?? ''), `${language}.${key}`);
      }
    });

    test(`${language}: the SMS fits one segment with the longest SERVICE_NAME (40 characters) and any lifetime`, () => {
      for (const count of [1, 2, 5, 10, 60]) {
        const text = translate(language, 'sms_code', { service: 'A'.repeat(40), code: '123456', count });
        assert.ok(fitsOneSegment(text), `${language}, ${count} min: ${text.length} characters: ${text}`);
        assert.ok(text.includes('123456'));
      }
    });
  }

  test('the plural follows the language: 1 minute, 5 minutes', () => {
    assert.match(translate('en', 'sms_code', { service: 'MFA', code: '123456', count: 1 }), /in 1 minute\.$/);
    assert.match(translate('de', 'sms_code', { service: 'MFA', code: '123456', count: 5 }), /5 Minuten gültig\.$/);
  });
});

describe('choosing the language', () => {
  test('the first shipped language of the preferences, by its primary subtag; English otherwise', () => {
    assert.equal(pickLanguage(['pt-BR', 'en']), 'pt');
    assert.equal(pickLanguage(['nl', 'de-AT']), 'de');
    assert.equal(pickLanguage(['FR_ca']), 'fr');
    assert.equal(pickLanguage(['nl', 'sv']), 'en');
    assert.equal(pickLanguage([]), 'en');
  });

  test('Accept-Language is read by its q-values, most wanted first', () => {
    assert.deepEqual(acceptedLanguages('en;q=0.5, es-MX, fr;q=0.8'), ['es-MX', 'fr', 'en']);
    assert.deepEqual(acceptedLanguages(undefined), []);
  });
});
