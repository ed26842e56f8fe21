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
 * carries one language, not five. The texts of a part of the page loaded later (addPart) come with
 * that part.
 */
const catalogues: Partial<Record<Language, Catalogue>> = { en: { ...en } };
let language: Language = 'en';
const changeListeners: (() => void)[] = [];
/** What the build lists of each part's catalogues, as <meta name="catalogues"> lists the page's (addPart). */
const partsListed: string[] = [];

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
  if (!catalogues[wanted]) {
    const [main, ...parts] = await Promise.all(
      [pageCatalogues(), ...partsListed].map((listed) => fetchCatalogue(wanted, listed)),
    );
    if (main) for (const part of parts) if (part) merge(main, part);
    catalogues[wanted] = main;
  }
  const shown = catalogues[wanted] ? wanted : 'en';
  // The same language again changes nothing: the texts the page has set since stay as they are.
  if (shown === language) return shown;
  language = shown;
  document.documentElement.lang = shown;
  translateWithin(document);
  for (const listener of changeListeners) listener();
  return shown;
}

/**
 * Adds the texts of a part of the page that its script loaded later (the hosted sign-in's
 * enrolment, see LAZY_TEXTS in scripts/build.mjs): `english`, which the part carries, and the part's
 * catalogue in the page's language, fetched from the files `listed` names ("de path integrity, …"
 * as in <meta name="catalogues">). The page is then translated again, its new part with it.
 */
export async function addPart({ english, listed }: { english: Catalogue; listed: string }): Promise<void> {
  merge(catalogues.en as Catalogue, english);
  partsListed.push(listed);
  const shown = catalogues[language];
  if (language === 'en' || !shown) return;
  const texts = await fetchCatalogue(language, listed);
  // Not to be had: the part speaks English (its elements keep the English the build wrote).
  if (texts) merge(shown, texts);
  translateWithin(document);
  for (const listener of changeListeners) listener();
}

/** Puts `texts`' keys into `into`, nested keys beside those it has. */
function merge(into: Catalogue, texts: Catalogue): void {
  for (const [key, text] of Object.entries(texts)) {
    const there = into[key];
    if (typeof text !== 'string' && there !== undefined && typeof there !== 'string') merge(there, text);
    else into[key] = text;
  }
}

/** What <meta name="catalogues"> lists: the page's catalogue in each language but English. */
function pageCatalogues(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="catalogues"]')?.content ?? '';
}

/** The catalogue `listed` names in `wanted`, checked against its hash; undefined if it cannot be had. */
async function fetchCatalogue(wanted: Language, listed: string): Promise<Catalogue | undefined> {
  const entry = listed
    .split(',')
    .map((item) => item.trim().split(/\s+/))
    .find(([code]) => code === wanted);
  if (!entry) return undefined;
  const [, path = '', integrity = ''] = entry;
  try {
    const response = await fetch(new URL(path, document.baseURI), { integrity });
    return response.ok ? ((await response.json()) as Catalogue) : undefined;
  } catch {
    return undefined;
  }
}

/** `listener` runs each time the language changes, to redraw the texts a page made itself. */
export function onLanguageChange(listener: () => void): void {
  changeListeners.push(listener);
}

/**
 * Sets the texts and attributes that the elements under `root` name (data-i18n, data-i18n-attrs).
 * A key the page has no text for yet (a part not loaded, see addPart) leaves what is there: the
 * English the build wrote.
 */
export function translateWithin(root: ParentNode): void {
  for (const element of root.querySelectorAll<HTMLElement>('[data-i18n]')) {
    const key = element.dataset.i18n ?? '';
    const text = t(key);
    if (text !== key) element.textContent = text;
  }
  for (const element of root.querySelectorAll<HTMLElement>('[data-i18n-attrs]')) {
    for (const pair of (element.dataset.i18nAttrs ?? '').split(/\s+/).filter(Boolean)) {
      const [attribute = '', key = ''] = pair.split(':');
      const text = t(key);
      if (text !== key) element.setAttribute(attribute, text);
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
