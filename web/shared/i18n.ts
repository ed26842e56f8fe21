// The pages' texts in the languages of their users (CONTRACT §22). Each area's catalogues are JSON
// files, one per language, in web/<area>/locales/ (web/shared/locales/ for what several pages
// show), nested under one top-level key per area; English is the reference every other catalogue has
// every key of (test/unit/page-languages.test.ts). i18next picks plural forms by the CLDR rules of
// each language. An element of the HTML names its text with data-i18n="key" (the build writes the
// English text in, for the first paint) and its attributes with data-i18n-attrs="attr:key attr:key".
import i18next from 'i18next';
import de from './locales/de.json' with { type: 'json' };
import en from './locales/en.json' with { type: 'json' };
import es from './locales/es.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };
import pt from './locales/pt.json' with { type: 'json' };

/** The languages shipped, as src/i18n/messages.ts ships them for SMS and mail. */
export const LANGUAGES = ['en', 'de', 'fr', 'es', 'pt'] as const;
export type Language = (typeof LANGUAGES)[number];
/** One area's catalogues: every shipped language's texts. */
export type Catalogues = Record<Language, Record<string, unknown>>;

/** The languages' own names, for a choice of language (each in itself). */
export const LANGUAGE_NAMES: Record<Language, string> = {
  en: 'English',
  de: 'Deutsch',
  fr: 'Français',
  es: 'Español',
  pt: 'Português',
};

const i18n = i18next.createInstance();
void i18n.init({
  lng: 'en',
  fallbackLng: 'en',
  initAsync: false,
  showSupportNotice: false,
  resources: {},
  // Texts are set as textContent or attribute values, never parsed as HTML: nothing to escape.
  interpolation: { escapeValue: false },
});
addCatalogues({ en, de, fr, es, pt });

const changeListeners: (() => void)[] = [];

/** Makes an area's texts known (a page adds its own beside the shared ones, before it starts). */
export function addCatalogues(catalogues: Catalogues): void {
  for (const language of LANGUAGES) {
    i18n.addResourceBundle(language, 'translation', catalogues[language], true, false);
  }
}

/** The text `key` in the page's language, with its values (`count` chooses the plural form). */
export function t(key: string, values?: Record<string, string | number>): string {
  return i18n.t(key, values ?? {});
}

/** The page's language now. */
export function currentLanguage(): Language {
  return i18n.language as Language;
}

/**
 * The first shipped language of `preferences` (BCP 47 tags, most wanted first), matched on its
 * primary subtag (pt-BR is pt); English when none is.
 */
export function pickLanguage(preferences: readonly string[]): Language {
  for (const tag of preferences) {
    const primary = tag.trim().toLowerCase().split(/[-_]/)[0];
    const found = LANGUAGES.find((language) => language === primary);
    if (found) return found;
  }
  return 'en';
}

/**
 * Shows the page in the first shipped language of `preferences` (the browser's own languages when
 * none are given): the document's lang, every data-i18n text, and whatever the page drew itself
 * (its listeners, see onLanguageChange). Returns the language chosen.
 */
export function useLanguage(preferences: readonly string[] = navigator.languages): Language {
  const language = pickLanguage(preferences);
  const changed = language !== i18n.language;
  void i18n.changeLanguage(language);
  document.documentElement.lang = language;
  translateWithin(document);
  if (changed) for (const listener of changeListeners) listener();
  return language;
}

/** `listener` runs each time the language changes, to redraw the texts a page made itself. */
export function onLanguageChange(listener: () => void): void {
  changeListeners.push(listener);
}

/** Sets the texts and attributes that the elements under `root` name (data-i18n, data-i18n-attrs). */
export function translateWithin(root: ParentNode): void {
  for (const element of root.querySelectorAll<HTMLElement>('[data-i18n]')) {
    element.textContent = t(element.dataset.i18n ?? '');
  }
  for (const element of root.querySelectorAll<HTMLElement>('[data-i18n-attrs]')) {
    for (const pair of (element.dataset.i18nAttrs ?? '').split(/\s+/).filter(Boolean)) {
      const [attribute = '', key = ''] = pair.split(':');
      element.setAttribute(attribute, t(key));
    }
  }
}

/** A date and time (or a date alone) written as the page's language writes it. */
export function dateTime(date: Date, style: 'date' | 'date-time' | 'long' = 'date-time'): string {
  const options: Intl.DateTimeFormatOptions =
    style === 'date'
      ? { dateStyle: 'medium' }
      : style === 'long'
        ? { dateStyle: 'long', timeStyle: 'short' }
        : { dateStyle: 'medium', timeStyle: 'short' };
  return new Intl.DateTimeFormat(currentLanguage(), options).format(date);
}
