// The account's password (CONTRACT §19, §20): changed, added to an account that has none, or
// removed once two passkeys can sign in instead. Each is a sensitive change: the service may ask
// to confirm it is you first (the API's RFC 9470 step-up), and then the change goes on.
import { byId, closeOnEscape } from '../shared/dom.js';
import { onLanguageChange, t } from '../shared/i18n.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { Api } from './api.js';
import type { Step } from './messages.js';

type Act = (step: Step, container: HTMLElement | undefined, action: () => Promise<void>) => Promise<void>;

export function createPasswordPanel(api: Api, act: Act, reload: () => Promise<unknown>) {
  const summary = byId('password-summary');
  const title = byId('password-title');
  const buttons = {
    change: byId<HTMLButtonElement>('password-change'),
    add: byId<HTMLButtonElement>('password-add'),
    remove: byId<HTMLButtonElement>('password-remove'),
  };
  const form = byId<HTMLFormElement>('password-change-form');
  const currentField = byId('current-password-field');
  const current = byId<HTMLInputElement>('current-password');
  const next = byId<HTMLInputElement>('new-password');
  const removeBox = byId('password-remove-box');
  let hasPassword = true;
  let passkeyCount = 0;

  function render(withPassword: boolean, passkeys: number) {
    hasPassword = withPassword;
    passkeyCount = passkeys;
    summary.textContent = withPassword
      ? passkeys >= 2
        ? t('account.password.withPasskeys')
        : t('account.password.withPassword')
      : t('account.password.none');
    buttons.change.hidden = !withPassword;
    buttons.add.hidden = withPassword;
    buttons.remove.hidden = !withPassword || passkeys < 2;
    close();
  }
  onLanguageChange(() => render(hasPassword, passkeyCount));

  function close() {
    form.hidden = true;
    form.reset();
    removeBox.hidden = true;
  }

  function openForm() {
    close();
    clearNotices();
    currentField.hidden = !hasPassword;
    byId('password-change-title').textContent = hasPassword ? t('account.password.change') : t('account.password.add');
    form.hidden = false;
    (hasPassword ? current : next).focus();
  }

  buttons.change.addEventListener('click', openForm);
  buttons.add.addEventListener('click', openForm);
  const cancel = () => {
    close();
    (hasPassword ? buttons.change : buttons.add).focus();
  };
  form.querySelector('[data-cancel]')?.addEventListener('click', cancel);
  closeOnEscape(form, cancel);

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if ([...next.value].length < 8) {
      warn(t('account.password.tooShort'), next);
      next.focus();
      return;
    }
    const body = hasPassword
      ? { current_password: current.value, new_password: next.value }
      : { new_password: next.value };
    void act('password', form, async () => {
      await api.call('PUT', 'mfa/password/', { body });
      const added = !hasPassword;
      await reload();
      say(added ? t('account.password.added') : t('account.password.changed'), title);
      title.focus();
    });
  });

  buttons.remove.addEventListener('click', () => {
    close();
    clearNotices();
    removeBox.hidden = false;
    byId('password-remove-confirm').focus();
  });
  const keep = () => {
    close();
    buttons.remove.focus();
  };
  byId('password-remove-keep').addEventListener('click', keep);
  closeOnEscape(removeBox, keep);
  byId('password-remove-confirm').addEventListener('click', () =>
    act('other', removeBox, async () => {
      await api.call('DELETE', 'mfa/password/');
      await reload();
      say(t('account.password.removed'), title);
      title.focus();
    }),
  );

  return { render, close };
}
