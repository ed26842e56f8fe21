// The pages' texts in the languages of their users (CONTRACT §22). Each area's catalogues are JSON
// files, one per language, in web/<area>/locales/ (web/shared/locales/ for what several pages
// show), nested under one top-level key per area; English is the reference every other catalogue has
// every key of (test/unit/page-languages.test.ts). web/shared/translate.ts looks texts up, plural
// forms by the CLDR rules of each language. An element of the HTML names its text with data-i18n="key" (the build writes the
// English text in, for the first paint) and its attributes with data-i18n-attrs="attr:key attr:key".

import { type Language, pickLanguage } from '../../src/i18n/languages.js';
import en from './locales/en.json' with { type: 'json' };
import { type Catalogue, translate } from './translate.js';

export { findLanguage, LANGUAGES, type Language } from '../../src/i18n/languages.js';

/** The languages' own names, for a choice of language (each in itself). */
export const LANGUAGE_NAMES: Record<Language, string> = {
  en: 'English',
  de: 'Deutsch',
  fr: 'Français',
  es: 'Español',
  pt: 'Português',
};

/**
 * The page's texts by language. English is in the script (the shared texts here, the page's own
 * added by its main.ts); another language is fetched once it is chosen, from the file the build
 * made of the shared and the page's catalogues (named in <meta name="catalogues">), so that a page
 * carries one language, not five.
 */
const catalogues: Partial<Record<Language, Catalogue>> = { en: { ...en } };
let language: Language = 'en';
const changeListeners: (() => void)[] = [];

/** Adds the page's own English texts (web/<area>/locales/en.json) to the shared ones, before it starts. */
export function addEnglish(catalogue: Catalogue): void {
  Object.assign(catalogues.en as Catalogue, catalogue);
}

/** The text `key` in the page's language, with its values (`count` chooses the plural form). */
export function t(key: string, values?: Record<string, string | number>): string {
  return translate(language, catalogues[language], catalogues.en as Catalogue, key, values);
}

/** The page's language now. */
export function currentLanguage(): Language {
  return language;
}

/**
 * Shows the page in the first shipped language of `preferences` (the browser's own languages when
 * none are given): the document's lang, every data-i18n text, and whatever the page drew itself
 * (its listeners, see onLanguageChange), when that language is not the one shown already (the
 * first paint is English). Returns the language shown: English when the chosen
 * language's catalogue could not be fetched.
 */
export async function useLanguage(preferences: readonly string[] = navigator.languages): Promise<Language> {
  const wanted = pickLanguage(preferences);
  if (!catalogues[wanted]) catalogues[wanted] = await fetchCatalogue(wanted);
  const shown = catalogues[wanted] ? wanted : 'en';
  // The same language again changes nothing: the texts the page has set since stay as they are.
  if (shown === language) return shown;
  language = shown;
  document.documentElement.lang = shown;
  translateWithin(document);
  for (const listener of changeListeners) listener();
  return shown;
}

/** The catalogue the build made for this page in `wanted`, checked against its hash; undefined if it cannot be had. */
async function fetchCatalogue(wanted: Language): Promise<Catalogue | undefined> {
  const listed = document.querySelector<HTMLMetaElement>('meta[name="catalogues"]')?.content ?? '';
  const entry = listed
    .split(',')
    .map((item) => item.trim().split(/\s+/))
    .find(([code]) => code === wanted);
  if (!entry) return undefined;
  const [, path = '', integrity = ''] = entry;
  try {
    const response = await fetch(new URL(path, location.href), { integrity });
    return response.ok ? ((await response.json()) as Catalogue) : undefined;
  } catch {
    return undefined;
  }
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

/**
 * The locale that writes dates, times and numbers: the browser's own variant of the page's language
 * when it names one (en-GB writes 14:05 where en-US writes 2:05 PM; pt-BR and pt-PT differ), else
 * the language alone.
 */
export function pageLocale(): string {
  const tag = navigator.languages.find((found) => found.toLowerCase().split(/[-_]/)[0] === language);
  try {
    return tag ? (Intl.getCanonicalLocales(tag)[0] ?? language) : language;
  } catch {
    return language;
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
  return new Intl.DateTimeFormat(pageLocale(), options).format(date);
}
