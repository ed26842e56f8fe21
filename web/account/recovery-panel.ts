// CONTRACT §20: a request to recover the account without its ways to verify. While one waits, the
// page says so with a button that cancels it; a sign-in with a second factor has already cancelled
// one made before it, and the page says that too while the request would still have been waiting.
import { byId } from '../shared/dom.js';
import { dateTime, onLanguageChange, t } from '../shared/i18n.js';
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
  let shown: RecoveryRequest = { state: 'none', ready_at: null };

  function render(request: RecoveryRequest) {
    shown = request;
    const readyAt = request.ready_at ? new Date(request.ready_at) : undefined;
    const isWaiting = request.state === 'waiting';
    const wasJustCancelled = request.state === 'cancelled' && readyAt !== undefined && readyAt > new Date();
    panel.hidden = !readyAt || !(isWaiting || wasJustCancelled);
    cancel.hidden = !isWaiting;
    if (panel.hidden || !readyAt) return;
    title.textContent = isWaiting ? t('account.recovery.waitingTitle') : t('account.recovery.cancelledTitle');
    summary.textContent = isWaiting
      ? t('account.recovery.waiting', { when: dateTime(readyAt, 'long') })
      : t('account.recovery.cancelled');
  }
  onLanguageChange(() => render(shown));

  cancel.addEventListener('click', () =>
    act('other', panel, async () => {
      await api.call('DELETE', 'mfa/recovery-request/');
      render(await api.call<RecoveryRequest>('GET', 'mfa/recovery-request/'));
      say(t('account.recovery.done'), title);
      title.focus();
    }),
  );

  return { render };
}
