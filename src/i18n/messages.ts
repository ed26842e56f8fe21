import i18next from 'i18next';
import Negotiator from 'negotiator';
import de from './locales/de.json' with { type: 'json' };
import en from './locales/en.json' with { type: 'json' };
import es from './locales/es.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };
import pt from './locales/pt.json' with { type: 'json' };

// The service's own texts in the languages of its users (CONTRACT §22): one catalogue per language
// in src/i18n/locales/, English the reference every other has every key of; i18next for the
// plurals (the CLDR rules of each language, through Intl.PluralRules).

/** The languages shipped, by their ISO 639-1 code. README "Adding a language" says how to add one. */
export const CATALOGUES = { en, de, fr, es, pt } as const;
export type Language = keyof typeof CATALOGUES;
export const LANGUAGES = Object.keys(CATALOGUES) as Language[];
/** True for the code of a shipped language. */
export function isLanguage(code: unknown): code is Language {
  return typeof code === 'string' && Object.hasOwn(CATALOGUES, code);
}

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

/**
 * The first language of `preferences` (BCP 47 tags, most wanted first: ui_locales, then the
 * user's, then Accept-Language) that is shipped, matched on its primary subtag (pt-BR is pt);
 * English when none is.
 */
export function pickLanguage(preferences: readonly string[]): Language {
  for (const tag of preferences) {
    const primary = tag.trim().toLowerCase().split(/[-_]/)[0];
    const found = LANGUAGES.find((language) => language === primary);
    if (found) return found;
  }
  return 'en';
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
