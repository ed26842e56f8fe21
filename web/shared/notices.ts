import { byId } from './dom.js';

// A message is announced by one of two live regions, hidden from sight (role=status for news,
// role=alert for problems), and shown next to what the person was doing: in the nearest message
// slot (an element of class "notice") among the ancestors of the element given. One message at a
// time: each replaces the last (a new text node is announced even when the words repeat).

/** Announces good news, shown near `near`. */
export function say(text: string, near?: Element | null): void {
  show(text, near, false);
}

/**
 * Announces a problem, shown near `near`. A problem with an input (`near` is the input) marks it
 * invalid, ties the message to it (aria-describedby) and puts the focus there.
 */
export function warn(text: string, near?: Element | null): void {
  const slot = show(text, near, true);
  if (!(near instanceof HTMLInputElement) || near.closest('[hidden]')) return;
  slot.id ||= `notice-${++slotCount}`;
  near.setAttribute('aria-invalid', 'true');
  near.dataset.describedBefore = near.getAttribute('aria-describedby') ?? '';
  near.setAttribute('aria-describedby', `${near.dataset.describedBefore} ${slot.id}`.trim());
  near.focus();
}

let slotCount = 0;

/**
 * Runs a call to the service about `field`: a refusal is then shown at the field (as `warn` does
 * with an input), wherever the page's error handling shows it.
 */
export async function about<T>(field: HTMLInputElement, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof Error) refusedFields.set(error, field);
    throw error;
  }
}

const refusedFields = new WeakMap<Error, HTMLInputElement>();

/** Where a refusal belongs: the field `about` named, else `fallback`. */
export function placeOf(error: unknown, fallback: HTMLElement): HTMLElement {
  return (error instanceof Error && refusedFields.get(error)) || fallback;
}

export function clearNotices(): void {
  byId('status').replaceChildren();
  byId('alert').replaceChildren();
  for (const slot of document.querySelectorAll<HTMLElement>('.notice')) {
    slot.replaceChildren();
    slot.hidden = true;
  }
  for (const input of document.querySelectorAll<HTMLInputElement>('input[aria-invalid]')) {
    input.removeAttribute('aria-invalid');
    const before = input.dataset.describedBefore;
    if (before) input.setAttribute('aria-describedby', before);
    else input.removeAttribute('aria-describedby');
    delete input.dataset.describedBefore;
  }
}

function show(text: string, near: Element | null | undefined, isProblem: boolean): HTMLElement {
  clearNotices();
  byId(isProblem ? 'alert' : 'status').replaceChildren(document.createTextNode(text));
  const slot = slotNear(near);
  slot.textContent = text;
  slot.classList.toggle('notice-error', isProblem);
  slot.hidden = false;
  return slot;
}

/** The message slot of `near` or its nearest ancestor that is on screen; the page's own otherwise. */
function slotNear(near: Element | null | undefined): HTMLElement {
  for (let node = near ?? null; node; node = node.parentElement) {
    const slot = [...node.children].find((child) => child.classList.contains('notice'));
    if (slot instanceof HTMLElement && !node.closest('[hidden]')) return slot;
  }
  return byId('page-notice');
}

/** Announces news that the page already shows in place (a changed intro): heard, not shown twice. */
export function announce(text: string): void {
  clearNotices();
  byId('status').replaceChildren(document.createTextNode(text));
}
