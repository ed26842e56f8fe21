// Issue 31: on a phone-sized screen a factor's actions wait behind one button ("Manage ▾", named
// for the factor) that opens them under it; wider, the style sheet hides that button and shows the
// actions as a row (web/account/style.css). A disclosure (aria-expanded), not an ARIA menu: its
// items stay ordinary buttons, reached with Tab; the arrow keys move between them too, and Escape
// closes it and gives the focus back to the button that opened it.
import { button, el } from '../shared/dom.js';

export function createFactorMenu(actions: HTMLElement, label: string, context: string) {
  const opener = button(label, context);
  opener.classList.add('factor-menu-button');
  opener.dataset.action = 'menu';
  opener.setAttribute('aria-expanded', 'false');
  opener.setAttribute('aria-controls', actions.id);
  // Points down while closed, up while open; hidden from the accessible name, which aria-expanded completes.
  const arrow = el('span', { 'aria-hidden': 'true' }, ' ▾');
  opener.append(arrow);
  const menu = el('div', { class: 'factor-menu' }, opener, actions);

  const isOpen = () => actions.classList.contains('is-open');
  /** Whether the actions hide behind the menu button (a narrow screen) rather than show as a row. */
  const isCollapsed = () => getComputedStyle(opener).display !== 'none';
  const items = () => [...actions.querySelectorAll<HTMLButtonElement>('button:not([hidden]):not(:disabled)')];

  function open() {
    actions.classList.add('is-open');
    opener.setAttribute('aria-expanded', 'true');
    arrow.textContent = ' ▴';
    items()[0]?.focus();
  }

  function close({ focusOpener = false } = {}) {
    if (!isOpen()) return;
    actions.classList.remove('is-open');
    opener.setAttribute('aria-expanded', 'false');
    arrow.textContent = ' ▾';
    if (focusOpener) opener.focus();
  }

  opener.addEventListener('click', () => (isOpen() ? close() : open()));
  menu.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && isOpen()) {
      event.preventDefault();
      close({ focusOpener: true });
      return;
    }
    if ((event.key !== 'ArrowDown' && event.key !== 'ArrowUp') || !isOpen()) return;
    const found = items();
    const at = found.indexOf(document.activeElement as HTMLButtonElement);
    const next = event.key === 'ArrowDown' ? at + 1 : at - 1;
    event.preventDefault();
    found[(next + found.length) % found.length]?.focus();
  });
  // An action chosen, or the focus gone elsewhere (a tap outside, Tab past the last action): closed.
  actions.addEventListener('click', (event) => {
    if ((event.target as Element).closest('button')) close();
  });
  menu.addEventListener('focusout', (event) => {
    if (!(event.relatedTarget instanceof Node && menu.contains(event.relatedTarget))) close();
  });

  return {
    element: menu,
    /** Where the focus goes back to after one of the actions: the action, or the menu button where the actions hide. */
    focusTarget(action: HTMLElement): HTMLElement {
      return isCollapsed() && !isOpen() ? opener : action;
    },
  };
}
