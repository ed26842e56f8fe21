import i18next from 'i18next';
import Negotiator from 'negotiator';
import { findLanguage, LANGUAGES, type Language } from './languages.js';
import de from './locales/de.json' with { type: 'json' };
import en from './locales/en.json' with { type: 'json' };
import es from './locales/es.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };
import pt from './locales/pt.json' with { type: 'json' };

// The service's own texts in the languages of its users (CONTRACT §22): one catalogue per language
// in src/i18n/locales/, English the reference every other has every key of; i18next for the
// plurals (the CLDR rules of each language, through Intl.PluralRules).

export { isLanguage, LANGUAGES, type Language, pickLanguage } from './languages.js';

/** The shipped language a sign-in's ui_locales asks for first, if any: it comes before every other preference. */
export function requestedLanguage(uiLocales: string | undefined): Language | undefined {
  return findLanguage(uiLocales?.split(' ').filter(Boolean) ?? []);
}

/** Each shipped language's catalogue (src/i18n/languages.ts lists them). */
export const CATALOGUES: Record<Language, typeof en> = { en, de, fr, es, pt };

/** A message's key: a plural's forms (`x_one`, `x_other`) are asked for as `x`, with a count. */
type BaseKey<Key> = Key extends `${infer Base}_${'one' | 'other'}` ? Base : Key;
export type MessageKey = BaseKey<keyof typeof en>;

const i18n = i18next.createInstance();
void i18n.init({
  resources: Object.fromEntries(LANGUAGES.map((language) => [language, { translation: CATALOGUES[language] }])),
  lng: 'en',
  fallbackLng: 'en',
  initAsync: false,
  // i18next otherwise prints an advertisement to the console on start: logs are JSON lines.
  showSupportNotice: false,
  // Texts go into SMS and mail bodies, never into HTML: nothing to escape.
  interpolation: { escapeValue: false },
});

/** The message `key` in `language`, with its values (`count` chooses the plural form). */
export function translate(language: Language, key: MessageKey, values: Record<string, string | number>): string {
  return i18n.getFixedT(language)(key, values);
}

/** The languages of an Accept-Language header, most wanted first (q-values honoured). */
export function acceptedLanguages(header: string | undefined): string[] {
  if (!header) return [];
  return new Negotiator({ headers: { 'accept-language': header } }).languages();
}

/**
 * What a request prefers (CONTRACT §22): its sign-in's ui_locales first, then the user's stored
 * language when there is one, then its Accept-Language.
 */
export function preferredLanguages(
  request: { uiLocales?: string; acceptLanguage?: string },
  stored?: string | null,
): string[] {
  return [
    ...(request.uiLocales?.split(' ').filter(Boolean) ?? []),
    ...(stored ? [stored] : []),
    ...acceptedLanguages(request.acceptLanguage),
  ];
}
