import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import i18next from 'i18next';
import { LANGUAGES as SERVICE_LANGUAGES } from '../../src/i18n/messages.js';
import { type Catalogue, translate } from '../../web/shared/translate.js';

// CONTRACT §22: the pages ship the service's languages, each catalogue with every key of the English
// one and the same placeholders, and every text a page names exists.

/** The languages the pages ship: those of the shared catalogues. */
const LANGUAGES = readdirSync('web/shared/locales').map((file) => file.replace(/\.json$/, ''));
const AREAS = readdirSync('web').filter((area) => existsSync(join('web', area, 'locales')));

/** A nested catalogue as flat keys ("account.title") and their texts. */
function flatten(catalogue: Record<string, unknown>, prefix = ''): Map<string, string> {
  const flat = new Map<string, string>();
  for (const [key, value] of Object.entries(catalogue)) {
    if (typeof value === 'string') flat.set(prefix + key, value);
    else for (const entry of flatten(value as Record<string, unknown>, `${prefix}${key}.`)) flat.set(...entry);
  }
  return flat;
}

const catalogueOf = (area: string, language: string) =>
  flatten(JSON.parse(readFileSync(join('web', area, 'locales', `${language}.json`), 'utf8')));
const placeholders = (text: string) => [...text.matchAll(/\{\{(\w+)\}\}/g)].map((match) => match[1]).sort();
/** A plural's forms (key_one, key_other, and _few, _many where CLDR has them) are one key. */
const baseKey = (key: string) => key.replace(/_(zero|one|two|few|many|other)$/, '');

function sourcesUnder(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|html)$/.test(file))
    .map((file) => join(folder, file));
}

describe('page catalogues', () => {
  test('the pages ship a catalogue of each language the service ships (src/i18n/languages.ts), and no other', () => {
    assert.deepEqual([...LANGUAGES].sort(), [...SERVICE_LANGUAGES].sort());
  });

  for (const area of AREAS) {
    const reference = catalogueOf(area, 'en');

    test(`web/${area}: one catalogue per language, each with the English keys (plural forms aside) and placeholders`, () => {
      const files = readdirSync(join('web', area, 'locales')).filter((file) => file.endsWith('.json'));
      assert.deepEqual(files.sort(), LANGUAGES.map((language) => `${language}.json`).sort());
      const referenceKeys = new Set([...reference.keys()].map(baseKey));
      for (const language of LANGUAGES) {
        const catalogue = catalogueOf(area, language);
        assert.deepEqual(
          new Set([...catalogue.keys()].map(baseKey)),
          referenceKeys,
          `web/${area}/locales/${language}.json`,
        );
        for (const [key, text] of catalogue) {
          assert.ok(text.trim().length > 0, `${area} ${language}: ${key} is empty`);
          const english = reference.get(key) ?? reference.get(`${baseKey(key)}_other`) ?? '';
          assert.deepEqual(placeholders(text), placeholders(english), `${area} ${language}: ${key}`);
        }
      }
    });

    if (area !== 'shared') {
      test(`web/${area}: its texts are under one key, "${area}", that no other catalogue uses`, () => {
        const topLevel = new Set([...reference.keys()].map((key) => key.split('.')[0]));
        assert.deepEqual([...topLevel], [area]);
        assert.ok(![...catalogueOf('shared', 'en').keys()].some((key) => key.split('.')[0] === area));
      });
    }
  }

  test('every text a page names (t("…"), data-i18n, data-i18n-attrs) is in the English catalogues', () => {
    const english = new Set(AREAS.flatMap((area) => [...catalogueOf(area, 'en').keys()].map(baseKey)));
    const missing: string[] = [];
    // web/shared/i18n.ts is the machinery: its comments show the syntax with made-up keys.
    for (const file of sourcesUnder('web').filter((found) => found !== join('web', 'shared', 'i18n.ts'))) {
      const source = readFileSync(file, 'utf8');
      const named = [
        ...[...source.matchAll(/\bt\(\s*'([\w.-]+)'/g)].map((match) => match[1]),
        ...[...source.matchAll(/\sdata-i18n="([^"]+)"/g)].map((match) => match[1]),
        ...[...source.matchAll(/\sdata-i18n-attrs="([^"]+)"/g)].flatMap((match) =>
          (match[1] ?? '').split(/\s+/).map((pair) => pair.split(':')[1]),
        ),
      ];
      for (const key of named) if (key && !english.has(key)) missing.push(`${file}: ${key}`);
    }
    assert.deepEqual(missing, []);
  });

  test('the pages look texts up as i18next would: plural forms, placeholders, English when missing', () => {
    for (const area of AREAS) {
      const english = JSON.parse(readFileSync(join('web', area, 'locales', 'en.json'), 'utf8')) as Catalogue;
      for (const language of LANGUAGES) {
        const catalogue = JSON.parse(
          readFileSync(join('web', area, 'locales', `${language}.json`), 'utf8'),
        ) as Catalogue;
        const reference = i18next.createInstance();
        void reference.init({
          lng: language,
          fallbackLng: 'en',
          initAsync: false,
          showSupportNotice: false,
          interpolation: { escapeValue: false },
          resources: { en: { translation: english }, [language]: { translation: catalogue } },
        });
        for (const key of new Set([...catalogueOf(area, 'en').keys()].map(baseKey))) {
          for (const count of [0, 1, 2, 5, 21, 1.5]) {
            const values = { count, name: 'N', service: 'S', client: 'C', seconds: 7, ending: '2671' };
            assert.equal(
              translate(language, catalogue, english, key, values),
              reference.t(key, values),
              `${language} ${key} ${count}`,
            );
          }
        }
      }
    }
    const english: Catalogue = {
      shared: { hello: 'Hello {{name}}', left_one: '{{count}} left', left_other: '{{count}} left in all' },
    };
    assert.equal(translate('de', { shared: {} }, english, 'shared.hello', { name: 'Ada' }), 'Hello Ada');
    assert.equal(translate('en', undefined, english, 'shared.left', { count: 1 }), '1 left');
    assert.equal(translate('en', undefined, english, 'shared.left', { count: 3 }), '3 left in all');
    assert.equal(translate('en', undefined, english, 'shared.unknown'), 'shared.unknown');
  });
});
