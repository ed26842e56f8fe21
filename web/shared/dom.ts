// Small DOM helpers: the page builds its elements from tags and text only (never HTML strings).

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

/**
 * Escape closes the form or the question the focus is in, as its Cancel (or Keep it) button does
 * (the button marked `data-cancel`), which also puts the focus back where the form was opened.
 */
export function closeOnEscape(): void {
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || event.defaultPrevented) return;
    const within = document.activeElement?.closest('form, .subpanel, .factor-form');
    const cancel = within?.querySelector<HTMLButtonElement>('[data-cancel]:not(:disabled)');
    if (!cancel || cancel.closest('[hidden]')) return;
    event.preventDefault();
    cancel.click();
  });
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
