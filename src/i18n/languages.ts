// The languages shipped and how a list of preferences picks one: shared by the service's texts
// (src/i18n/messages.ts) and the browser pages (web/shared/i18n.ts), so that both always offer the
// same languages and choose alike. No imports: the pages bundle it as it is.

/** The languages shipped, by their ISO 639-1 code. README "Adding a language" says how to add one. */
export const LANGUAGES = ['en', 'de', 'fr', 'es', 'pt'] as const;
export type Language = (typeof LANGUAGES)[number];

/** True for the code of a shipped language. */
export function isLanguage(code: unknown): code is Language {
  return typeof code === 'string' && (LANGUAGES as readonly string[]).includes(code);
}

/**
 * The first language of `preferences` (BCP 47 tags, most wanted first) that is shipped, matched on
 * its primary subtag (pt-BR is pt); undefined when none is.
 */
export function findLanguage(preferences: readonly string[]): Language | undefined {
  for (const tag of preferences) {
    const primary = tag.trim().toLowerCase().split(/[-_]/)[0];
    const found = LANGUAGES.find((language) => language === primary);
    if (found) return found;
  }
  return undefined;
}

/** As findLanguage, English when none is shipped. */
export function pickLanguage(preferences: readonly string[]): Language {
  return findLanguage(preferences) ?? 'en';
}
