import { byId } from './dom.js';

// One live region for news, one for problems; each message replaces the last, so a person hears
// the newest (a new text node is announced even when the words repeat).

const status = () => byId('status');
const alert = () => byId('alert');

/** Announces good news (role=status). */
export function say(text: string): void {
  alert().replaceChildren();
  status().replaceChildren(document.createTextNode(text));
}

/** Announces a problem (role=alert). */
export function warn(text: string): void {
  status().replaceChildren();
  alert().replaceChildren(document.createTextNode(text));
}

export function clearNotices(): void {
  status().replaceChildren();
  alert().replaceChildren();
}
