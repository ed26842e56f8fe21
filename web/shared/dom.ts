// Small DOM helpers: the page builds its elements from tags and text only (never HTML strings).
import { onLanguageChange, pageLocale, t } from './i18n.js';

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

type Child = Node | string;

/** `<tag class=…>children</tag>`, with attributes set one by one. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const created = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) created.setAttribute(name, value);
  created.append(...children);
  return created;
}

/** A button whose accessible name adds `context` (hidden from sight) to its visible text. */
export function button(text: string, context: string, className = 'secondary'): HTMLButtonElement {
  return el('button', { type: 'button', class: className }, text, el('span', { class: 'visually-hidden' }, context));
}

/** Disables every button of `container` while `action` runs, so that nothing is sent twice. */
export async function whileBusy(container: HTMLElement | undefined, action: () => Promise<void>): Promise<void> {
  const buttons = container ? [...container.querySelectorAll('button')].filter((found) => !found.disabled) : [];
  // Disabling the button that has the focus drops it to <body>: it goes back there afterwards.
  const focused = document.activeElement;
  for (const found of buttons) found.disabled = true;
  container?.setAttribute('aria-busy', 'true');
  try {
    await action();
  } finally {
    for (const found of buttons) found.disabled = false;
    container?.removeAttribute('aria-busy');
    const isFocusLost = document.activeElement === null || document.activeElement === document.body;
    if (isFocusLost && focused instanceof HTMLElement && focused.isConnected && !focused.closest('[hidden]')) {
      focused.focus();
    }
  }
}

/** What a person typed, without the spaces, dashes and dots people put in codes and numbers. */
export function digitsOf(value: string): string {
  return value.replace(/[\s\-.()/]/g, '');
}

/** "1234 5678 9012": long digit strings are easier to read and type in groups. */
export function grouped(text: string, size = 4): string {
  return text.match(new RegExp(`.{1,${size}}`, 'g'))?.join(' ') ?? text;
}

/**
 * Escape closes `container` (a form or a confirmation) while it is open and the focus is in it, as
 * its own cancel button does: `cancel` closes it and gives the focus back to what opened it.
 */
export function closeOnEscape(container: HTMLElement, cancel: () => void): void {
  container.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || container.hidden || event.defaultPrevented) return;
    event.preventDefault();
    cancel();
  });
}

/** Countries whose calling code has one or two digits (the others have three): ITU-T E.164 assigned codes. */
const SHORT_CALLING_CODES = new Set([
  '1',
  '7',
  '20',
  '27',
  '30',
  '31',
  '32',
  '33',
  '34',
  '36',
  '39',
  '40',
  '41',
  '43',
  '44',
  '45',
  '46',
  '47',
  '48',
  '49',
  '51',
  '52',
  '53',
  '54',
  '55',
  '56',
  '57',
  '58',
  '60',
  '61',
  '62',
  '63',
  '64',
  '65',
  '66',
  '81',
  '82',
  '84',
  '86',
  '90',
  '91',
  '92',
  '93',
  '94',
  '95',
  '98',
]);

/**
 * "+1 415 555 2671", "+44 740 012 3456": the digits of an international number (country code
 * first) in groups, the country code apart. A reading aid, not the country's own format.
 */
export function formattedPhone(digits: string): string {
  const plain = digits.replace(/\D/g, '');
  const codeLength = SHORT_CALLING_CODES.has(plain.slice(0, 1))
    ? 1
    : SHORT_CALLING_CODES.has(plain.slice(0, 2))
      ? 2
      : 3;
  const national = plain.slice(codeLength);
  const groups: string[] = [];
  let rest = national;
  while (rest.length > 4) {
    groups.push(rest.slice(0, 3));
    rest = rest.slice(3);
  }
  if (rest) groups.push(rest);
  return `+${plain.slice(0, codeLength)} ${groups.join(' ')}`.trim();
}

/** "just now", "2 minutes ago", "yesterday" in the page's language; a time ahead of this device's clock counts as now. */
export function timeAgo(when: Date, now = new Date()): string {
  const seconds = Math.max(0, (now.getTime() - when.getTime()) / 1000);
  if (seconds < 60) return t('time.justNow');
  const format = new Intl.RelativeTimeFormat(pageLocale(), { numeric: 'auto' });
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['minute', 60],
    ['hour', 3600],
    ['day', 86_400],
    ['month', 30 * 86_400],
    ['year', 365 * 86_400],
  ];
  let chosen = units[0] as [Intl.RelativeTimeFormatUnit, number];
  for (const unit of units) if (seconds >= unit[1]) chosen = unit;
  return format.format(-Math.floor(seconds / chosen[1]), chosen[0]);
}

/**
 * The texts a page wrote from its catalogue (with values only the script knows): each is written
 * again when the page's language changes, unless something else wrote over it since. Keyed by
 * element, so the newest text of each wins.
 */
const drawnTexts = new Map<HTMLElement, { text: () => string; shown: string }>();
/** The document's title, as drawnTexts holds the elements' texts. */
let drawnTitle: { text: () => string; shown: string } | undefined;

onLanguageChange(() => {
  for (const [element, drawn] of drawnTexts) {
    // translateWithin has just set a data-i18n element's own text: what the script drew wins again.
    const isOwn = element.textContent === drawn.shown || element.hasAttribute('data-i18n');
    if (!isOwn) {
      drawnTexts.delete(element);
      continue;
    }
    drawn.shown = drawn.text();
    element.textContent = drawn.shown;
  }
  if (drawnTitle) {
    if (document.title === drawnTitle.shown || document.querySelector('title[data-i18n]')) {
      drawnTitle.shown = drawnTitle.text();
      document.title = drawnTitle.shown;
    } else drawnTitle = undefined;
  }
});

/**
 * Sets the text of `element` from `text`, a function of the page's language (one that calls t),
 * called again when the language changes; a plain string is written once and stays.
 */
export function setText(element: HTMLElement, text: string | (() => string)): void {
  const shown = typeof text === 'string' ? text : text();
  if (typeof text === 'string') drawnTexts.delete(element);
  else drawnTexts.set(element, { text, shown });
  element.textContent = shown;
}

/** Sets the document's title as setText sets an element's text. */
export function setTitle(text: string | (() => string)): void {
  const shown = typeof text === 'string' ? text : text();
  drawnTitle = typeof text === 'string' ? undefined : { text, shown };
  document.title = shown;
}

/**
 * Disables `button` for `seconds`, its text counting them down (`label(seconds left)`, "Send a new
 * code (21 s)"), then enables it with `label()`. Answers what ends the countdown early.
 */
export function countDown(button: HTMLButtonElement, seconds: number, label: (left?: number) => string): () => void {
  let left = Math.ceil(seconds);
  let timer: ReturnType<typeof setInterval> | undefined;
  const end = () => {
    clearInterval(timer);
    timer = undefined;
    button.disabled = false;
    setText(button, () => label());
  };
  const tick = () => {
    if (left <= 0) return end();
    const shown = left;
    button.disabled = true;
    setText(button, () => label(shown));
    left -= 1;
  };
  tick();
  timer = setInterval(tick, 1000);
  return end;
}
