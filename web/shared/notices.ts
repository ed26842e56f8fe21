import { byId } from './dom.js';

// A message is announced by one of two live regions, hidden from sight (role=status for news,
// role=alert for problems), and shown next to what the person was doing: in the nearest message
// slot (an element of class "notice") among the ancestors of the element given. One message at a
// time: each replaces the last (a new text node is announced even when the words repeat).

/** Announces good news, shown near `near`. */
export function say(text: string, near?: Element | null): void {
  show(text, near, false);
}

/** Announces a problem, shown near `near`. */
export function warn(text: string, near?: Element | null): void {
  show(text, near, true);
}

export function clearNotices(): void {
  byId('status').replaceChildren();
  byId('alert').replaceChildren();
  for (const slot of document.querySelectorAll<HTMLElement>('.notice')) {
    slot.replaceChildren();
    slot.hidden = true;
  }
}

function show(text: string, near: Element | null | undefined, isProblem: boolean) {
  clearNotices();
  byId(isProblem ? 'alert' : 'status').replaceChildren(document.createTextNode(text));
  const slot = slotNear(near);
  slot.textContent = text;
  slot.classList.toggle('notice-error', isProblem);
  slot.hidden = false;
}

/** The message slot of `near` or its nearest ancestor that is on screen; the page's own otherwise. */
function slotNear(near: Element | null | undefined): HTMLElement {
  for (let node = near ?? null; node; node = node.parentElement) {
    const slot = [...node.children].find((child) => child.classList.contains('notice'));
    if (slot instanceof HTMLElement && !node.closest('[hidden]')) return slot;
  }
  return byId('page-notice');
}
