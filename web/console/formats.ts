// How the console writes numbers, times and lists: in the page's locale (web/shared/i18n.ts's
// pageLocale, the browser's own variant of the page's language).
import { pageLocale } from '../shared/i18n.js';

/** "1,234" (English), "1.234" (German): a number grouped as the page's language does. */
export function count(value: number): string {
  return new Intl.NumberFormat(pageLocale()).format(value);
}

/** The date and time of `date`, in full (a title that explains "2 hours ago"). */
export function dateAndTime(date: Date): string {
  return date.toLocaleString(pageLocale());
}

/** The date of `date` alone. */
export function dateOnly(date: Date): string {
  return date.toLocaleDateString(pageLocale());
}

/** A short date and time, for a table cell. */
export function shortDateTime(date: Date): string {
  return date.toLocaleString(pageLocale(), { dateStyle: 'short', timeStyle: 'short' });
}

/** "14:05": the hour and minute. */
export function clockTime(date: Date): string {
  return date.toLocaleTimeString(pageLocale(), { hour: '2-digit', minute: '2-digit' });
}

/** The full time of day, seconds too. */
export function timeOfDay(date: Date): string {
  return date.toLocaleTimeString(pageLocale());
}

/** "password and authenticator app": `items` as one list, as the page's language joins them. */
export function listOf(items: readonly string[]): string {
  return new Intl.ListFormat(pageLocale(), { type: 'conjunction' }).format(items);
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
