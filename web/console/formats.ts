// How the console writes numbers, times and lists: in the page's language (web/shared/i18n.ts),
// and in the browser's own variant of it when the browser names one (en-GB writes 14:05 where en-US
// writes 2:05 PM, pt-BR and pt-PT write dates apart).
import { currentLanguage } from '../shared/i18n.js';

/** The browser's first tag in the page's language (en-GB, pt-BR), else the language alone. */
export function locale(): string {
  const language = currentLanguage();
  const tag = navigator.languages.find((found) => found.toLowerCase().split(/[-_]/)[0] === language);
  try {
    return tag ? (Intl.getCanonicalLocales(tag)[0] ?? language) : language;
  } catch {
    return language;
  }
}

/** "1,234" (English), "1.234" (German): a number grouped as the page's language does. */
export function count(value: number): string {
  return new Intl.NumberFormat(locale()).format(value);
}

/** The date and time of `date`, in full (a title that explains "2 hours ago"). */
export function dateAndTime(date: Date): string {
  return date.toLocaleString(locale());
}

/** The date of `date` alone. */
export function dateOnly(date: Date): string {
  return date.toLocaleDateString(locale());
}

/** A short date and time, for a table cell. */
export function shortDateTime(date: Date): string {
  return date.toLocaleString(locale(), { dateStyle: 'short', timeStyle: 'short' });
}

/** "14:05": the hour and minute. */
export function clockTime(date: Date): string {
  return date.toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit' });
}

/** The full time of day, seconds too. */
export function timeOfDay(date: Date): string {
  return date.toLocaleTimeString(locale());
}

/** "password and authenticator app": `items` as one list, as the page's language joins them. */
export function listOf(items: readonly string[]): string {
  return new Intl.ListFormat(locale(), { type: 'conjunction' }).format(items);
}

/**
 * A text of the catalogue whose {{placeholders}} are elements (a <time> in a sentence): the text
 * with `nodes` put in, as the children of an element. Ask t() without those values, so that their
 * placeholders are left for this.
 */
export function withNodes(text: string, nodes: Record<string, Node>): (Node | string)[] {
  return text
    .split(/\{\{\s*(\w+)\s*\}\}/)
    .map((part, index) => (index % 2 === 1 ? (nodes[part] ?? `{{${part}}}`) : part))
    .filter((part) => part !== '');
}
