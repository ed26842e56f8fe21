// The account page's language (CONTRACT §22): the browser's languages until someone signs in, then
// the language stored for them (GET /mfa/language/), else the browser's again. What the page draws
// itself is drawn again after every switch, even to the language already shown: useLanguage
// rewrites every data-i18n element, and some of those the page has set otherwise since.
import { type Language, t, useLanguage } from '../shared/i18n.js';

const redraws: (() => void)[] = [];
let pageTitle = () => t('account.title');

/** `redraw` runs after each switch of language, to write again what the page drew itself. */
export function onRedraw(redraw: () => void): void {
  redraws.push(redraw);
}

/** Shows the page in `language`, or in the browser's languages when none is given (null: none stored). */
export async function showLanguage(language?: Language | null): Promise<Language> {
  const shown = await useLanguage(language ? [language] : navigator.languages);
  document.title = pageTitle();
  for (const redraw of redraws) redraw();
  return shown;
}

/** The document's title, written again in each new language. */
export function setPageTitle(title: () => string): void {
  pageTitle = title;
  document.title = title();
}
