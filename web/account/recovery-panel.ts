// CONTRACT §20: a request to recover the account without its ways to verify. While one waits, the
// page says so with a button that cancels it; a sign-in with a second factor has already cancelled
// one made before it, and the page says that too while the request would still have been waiting.
import { byId } from '../shared/dom.js';
import { say } from '../shared/notices.js';
import type { Api } from './api.js';
import type { Step } from './messages.js';

type Act = (step: Step, container: HTMLElement | undefined, action: () => Promise<void>) => Promise<void>;

export interface RecoveryRequest {
  state: 'none' | 'waiting' | 'cancelled' | 'completed';
  ready_at: string | null;
}

export function createRecoveryPanel(api: Api, act: Act) {
  const panel = byId('recovery-panel');
  const title = byId('recovery-title');
  const summary = byId('recovery-summary');
  const cancel = byId<HTMLButtonElement>('recovery-cancel');
  const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'long', timeStyle: 'short' });

  function render(request: RecoveryRequest) {
    const readyAt = request.ready_at ? new Date(request.ready_at) : undefined;
    const isWaiting = request.state === 'waiting';
    const wasJustCancelled = request.state === 'cancelled' && readyAt !== undefined && readyAt > new Date();
    panel.hidden = !readyAt || !(isWaiting || wasJustCancelled);
    cancel.hidden = !isWaiting;
    if (panel.hidden || !readyAt) return;
    const when = dateTimeFormat.format(readyAt);
    title.textContent = isWaiting ? 'Someone asked to recover your account' : 'A recovery request was cancelled';
    summary.textContent = isWaiting
      ? `Someone with your password asked to remove your ways to verify. Unless you cancel it, that can happen from ${when}. If it was not you, cancel it and change your password.`
      : 'Someone with your password had asked to remove your ways to verify; it was cancelled when you signed in. If it was not you, change your password.';
  }

  cancel.addEventListener('click', () =>
    act('other', panel, async () => {
      await api.call('DELETE', 'mfa/recovery-request/');
      render(await api.call<RecoveryRequest>('GET', 'mfa/recovery-request/'));
      say('Recovery cancelled: your ways to verify stay as they are.', title);
      title.focus();
    }),
  );

  return { render };
}
