import {
  browserSupportsWebAuthn,
  type PublicKeyCredentialCreationOptionsJSON,
  startRegistration,
} from '@simplewebauthn/browser';
import { generate } from 'lean-qr';
import { toSvg } from 'lean-qr/extras/svg';
import { ApiError } from '../shared/api-error.js';
import { button, byId, digitsOf, el, grouped, whileBusy } from '../shared/dom.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import { type Api, Cancelled, type Factor, SessionEnded } from './api.js';
import { describeError, type Step } from './messages.js';

const TYPE_LABELS: Record<Factor['type'], string> = {
  webauthn: 'Passkey',
  totp: 'Authenticator app',
  sms: 'SMS codes',
};

/** As the service checks it (FACTOR_NAME_PATTERN): 1 to 64 characters, none of them a control character. */
const FACTOR_NAME = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]{1,64}$/u;

/** Unused backup codes; 'unknown' when telling would need a fresher login; 'off' without MFA. */
type BackupState = number | 'unknown' | 'off';

/** The signed-in part: the factors, adding one, backup codes. */
export function createAccountView(api: Api, username: () => string) {
  const section = byId('account');
  const title = byId('account-title');
  const summary = byId('mfa-summary');
  const list = byId('factor-list');
  const none = byId('no-factors');
  const factorsTitle = byId('factors-title');
  const addButtons = {
    passkey: byId<HTMLButtonElement>('add-passkey'),
    totp: byId<HTMLButtonElement>('add-totp'),
    sms: byId<HTMLButtonElement>('add-sms'),
  };
  const forms = {
    passkey: byId<HTMLFormElement>('passkey-form'),
    totpStart: byId<HTMLFormElement>('totp-start-form'),
    totpVerify: byId<HTMLFormElement>('totp-verify-form'),
    smsStart: byId<HTMLFormElement>('sms-start-form'),
    smsVerify: byId<HTMLFormElement>('sms-verify-form'),
  };
  const backupSummary = byId('backup-summary');
  const backupCreate = byId<HTMLButtonElement>('backup-create');
  const backupBox = byId('backup-codes-box');
  const backupList = byId('backup-codes');
  let backupCodes: string[] = [];
  let smsNumber = '';
  /** The button that opened the add form on screen, to give focus back to. */
  let opener: HTMLButtonElement | undefined;

  const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
  const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

  /** Runs an action of the page; any error becomes a message, never an exception. */
  async function act(step: Step, container: HTMLElement | undefined, action: () => Promise<void>) {
    await whileBusy(container, async () => {
      try {
        await action();
      } catch (error) {
        if (error instanceof SessionEnded) return; // the sign-in screen says so
        if (error instanceof Cancelled) {
          if (api.isSignedIn) warn('Nothing was changed: that change needs you to confirm it is you.', container);
          return;
        }
        warn(describeError(error, step), container ?? section);
        if (error instanceof ApiError && error.code === 'not_found') await reload();
      }
    });
  }

  async function show(): Promise<void> {
    section.hidden = false;
    document.title = 'Sign-in security · Account security';
    closeForms();
    closeBackupCodes();
    await act('other', section, reload);
    title.focus();
  }

  function hide(): void {
    section.hidden = true;
    closeForms();
    closeBackupCodes();
    list.replaceChildren();
  }

  async function reload(): Promise<void> {
    const [{ factors }, backup] = await Promise.all([
      api.call<{ factors: Factor[] }>('GET', 'mfa/factors/'),
      backupState(),
    ]);
    renderFactors(factors);
    renderBackup(backup);
  }

  async function backupState(): Promise<BackupState> {
    try {
      return (await api.call<{ remaining: number }>('GET', 'mfa/recovery/', { stepUp: false })).remaining;
    } catch (error) {
      // Reading the count is a sensitive call too: not worth a re-authentication on its own.
      if (error instanceof ApiError && error.code === 'insufficient_user_authentication') return 'unknown';
      if (error instanceof ApiError && error.code === 'mfa_not_enabled') return 'off';
      throw error;
    }
  }

  function renderFactors(factors: Factor[]) {
    summary.textContent =
      factors.length > 0
        ? 'Two-step verification is on: after your password, signing in asks for your default factor (you can choose another of yours).'
        : 'Two-step verification is off: your password alone signs you in.';
    none.hidden = factors.length > 0;
    // The default first: it is what signing in asks for.
    const ordered = [...factors].sort((a, b) => Number(b.is_default) - Number(a.is_default));
    list.replaceChildren(...ordered.map((factor) => renderFactor(factor, factors.length === 1)));
  }

  function renderFactor(factor: Factor, isOnlyOne: boolean): HTMLLIElement {
    const quoted = ` “${factor.name}”`;
    const kind =
      factor.type === 'sms' && factor.phone_number
        ? `${TYPE_LABELS.sms} to the number ending ${factor.phone_number.slice(-4)}`
        : TYPE_LABELS[factor.type];
    const used = factor.last_used_at ? dateTimeFormat.format(new Date(factor.last_used_at)) : 'never';
    const rename = button('Rename', quoted);
    const makeDefault = button('Make default', quoted);
    const remove = button('Remove', quoted, 'danger');
    rename.dataset.action = 'rename';
    remove.dataset.action = 'remove';

    const nameInput = el('input', { id: `name-${factor.id}`, maxlength: '64', autocomplete: 'off' });
    nameInput.value = factor.name;
    const renameForm = el(
      'form',
      { class: 'factor-form', hidden: '' },
      el('div', { class: 'field' }, el('label', { for: nameInput.id }, `New name for${quoted}`), nameInput),
      el(
        'div',
        { class: 'actions' },
        el('button', { type: 'submit' }, 'Save'),
        el('button', { type: 'button', class: 'secondary', 'data-cancel': '' }, 'Cancel'),
      ),
    );
    const confirmRemove = el('button', { type: 'button', class: 'danger confirm' }, 'Yes, remove it');
    const keep = el('button', { type: 'button', class: 'secondary' }, 'Keep it');
    const confirmBox = el(
      'div',
      { class: 'factor-form', hidden: '' },
      el(
        'p',
        {},
        `Remove${quoted}? Signing in will no longer accept it.`,
        isOnlyOne
          ? ' It is your only second factor: two-step verification turns off.'
          : factor.is_default
            ? ' Another of your factors becomes the default.'
            : '',
      ),
      el('div', { class: 'actions' }, confirmRemove, keep),
    );
    const actions = el('div', { class: 'actions' }, rename, ...(factor.is_default ? [] : [makeDefault]), remove);
    const item = el(
      'li',
      { 'data-factor-id': factor.id },
      el(
        'div',
        { class: 'factor-head' },
        el('span', { class: 'factor-name' }, factor.name),
        ...(factor.is_default ? [el('span', { class: 'badge' }, 'Default')] : []),
      ),
      el('p', { class: 'factor-type' }, kind),
      el('p', { class: 'factor-dates' }, `Added ${dateFormat.format(new Date(factor.created_at))} · Last used ${used}`),
      el('p', { class: 'notice', hidden: '' }),
      actions,
      renameForm,
      confirmBox,
    );

    rename.addEventListener('click', () => {
      confirmBox.hidden = true;
      renameForm.hidden = false;
      nameInput.focus();
      nameInput.select();
    });
    renameForm.querySelector('[data-cancel]')?.addEventListener('click', () => {
      renameForm.hidden = true;
      nameInput.value = factor.name;
      rename.focus();
    });
    renameForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const name = nameInput.value.trim();
      if (!FACTOR_NAME.test(name)) {
        warn('A name has 1 to 64 characters.', item);
        nameInput.focus();
        return;
      }
      void act('other', renameForm, async () => {
        await api.call('PATCH', `mfa/factors/${encodeURIComponent(factor.id)}/`, { body: { name } });
        await reload();
        say(`Renamed to “${name}”.`, factorNamed(factor.id));
        focusInFactor(factor.id, 'rename');
      });
    });
    makeDefault.addEventListener('click', () =>
      act('other', actions, async () => {
        await api.call('PATCH', `mfa/factors/${encodeURIComponent(factor.id)}/`, { body: { is_default: true } });
        await reload();
        say(`“${factor.name}” is now your default: signing in asks for it first.`, factorNamed(factor.id));
        focusInFactor(factor.id, 'rename');
      }),
    );
    remove.addEventListener('click', () => {
      renameForm.hidden = true;
      confirmBox.hidden = false;
      keep.focus();
    });
    keep.addEventListener('click', () => {
      confirmBox.hidden = true;
      remove.focus();
    });
    confirmRemove.addEventListener('click', () =>
      act('other', confirmBox, async () => {
        try {
          await api.call('DELETE', `mfa/factors/${encodeURIComponent(factor.id)}/`);
        } catch (error) {
          if (error instanceof Cancelled) {
            confirmBox.hidden = true;
            remove.focus();
          }
          throw error;
        }
        await reload();
        say(
          isOnlyOne
            ? `Removed “${factor.name}”. Two-step verification is now off: your password alone signs you in.`
            : `Removed “${factor.name}”.`,
          factorsTitle,
        );
        factorsTitle.focus();
      }),
    );
    return item;
  }

  function factorNamed(id: string): HTMLElement | null {
    return list.querySelector<HTMLElement>(`li[data-factor-id="${CSS.escape(id)}"]`);
  }

  function focusInFactor(id: string, action: string) {
    factorNamed(id)?.querySelector<HTMLElement>(`[data-action="${action}"]`)?.focus();
  }

  function renderBackup(state: BackupState) {
    // Hidden rather than disabled: a button disabled while busy is enabled again afterwards.
    backupCreate.hidden = state === 'off';
    backupCreate.textContent =
      typeof state === 'number' && state > 0 ? 'Create new backup codes' : 'Create backup codes';
    backupSummary.textContent =
      state === 'off'
        ? 'Backup codes come with two-step verification: add a second factor first.'
        : state === 'unknown'
          ? 'Single-use codes for the day you cannot use your other factors. A new set cancels any earlier one.'
          : state === 0
            ? 'You have no unused backup codes. Create a set and keep it somewhere safe.'
            : `You have ${state} unused backup code${state === 1 ? '' : 's'}. A new set cancels these.`;
  }

  // Adding a factor: one form on screen at a time.

  function closeForms() {
    byId('add-buttons').hidden = false;
    for (const form of Object.values(forms)) {
      form.hidden = true;
      form.reset();
    }
    byId('totp-qr').replaceChildren();
    byId('totp-secret').textContent = '';
    smsNumber = '';
  }

  function open(form: HTMLFormElement, from: HTMLButtonElement) {
    closeForms();
    clearNotices();
    opener = from;
    // One thing at a time: the other ways to add come back with Cancel or when this one is done.
    byId('add-buttons').hidden = true;
    form.hidden = false;
    form.querySelector('input')?.focus();
  }

  /** The new factor is in the list: the message goes there. */
  async function finishAdding(message: string) {
    closeForms();
    opener = undefined;
    await reload();
    say(message, factorsTitle);
    factorsTitle.focus();
  }

  for (const form of Object.values(forms)) {
    form.querySelector('[data-cancel]')?.addEventListener('click', () => {
      closeForms();
      clearNotices();
      opener?.focus();
    });
  }

  function nameFrom(input: HTMLInputElement, fallback: string): string | undefined {
    const name = input.value.trim() || fallback;
    if (FACTOR_NAME.test(name)) return name;
    warn('A name has 1 to 64 characters.', input);
    input.focus();
    return undefined;
  }

  addButtons.passkey.addEventListener('click', () => open(forms.passkey, addButtons.passkey));
  forms.passkey.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameFrom(byId<HTMLInputElement>('passkey-name'), 'Passkey');
    if (!name) return;
    if (!browserSupportsWebAuthn()) {
      warn('This browser cannot make passkeys.', forms.passkey);
      return;
    }
    void act('passkey', forms.passkey, async () => {
      const { options } = await api.call<{ options: PublicKeyCredentialCreationOptionsJSON }>(
        'PUT',
        'mfa/webauthn/request/',
        { body: { name } },
      );
      const credential = await startRegistration({ optionsJSON: options });
      await api.call('PUT', 'mfa/webauthn/verify/', { body: { credential, name } });
      await finishAdding(`Passkey “${name}” added. Signing in can now use it.`);
    });
  });

  addButtons.totp.addEventListener('click', () => open(forms.totpStart, addButtons.totp));
  forms.totpStart.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameFrom(byId<HTMLInputElement>('totp-name'), 'Authenticator app');
    if (!name) return;
    void act('other', forms.totpStart, async () => {
      const enrolment = await api.call<{ secret: string; otpauth_uri: string }>('PUT', 'mfa/totp/request/', {
        body: { name },
      });
      forms.totpStart.hidden = true;
      // Drawn as SVG elements (no data: URL, no HTML string): the CSP and Trusted Types allow it.
      byId('totp-qr').replaceChildren(
        toSvg(generate(enrolment.otpauth_uri), document, { on: '#000', off: '#fff', pad: 4 }),
      );
      byId('totp-secret').textContent = grouped(enrolment.secret);
      forms.totpVerify.hidden = false;
      byId('totp-verify-title').focus();
    });
  });
  /** The last step of adding an app or a phone: the 6-digit code it shows or received proves it. */
  function verifyWithCode(form: HTMLFormElement, inputId: string, path: string, added: () => string) {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = byId<HTMLInputElement>(inputId);
      const code = digitsOf(input.value);
      if (!/^\d{6}$/.test(code)) {
        warn('Enter the 6 digits of the code.', input);
        input.focus();
        return;
      }
      void act('enrol_code', form, async () => {
        try {
          await api.call('PUT', path, { body: { mfa_code: code } });
        } catch (error) {
          input.value = '';
          input.focus();
          throw error;
        }
        await finishAdding(added());
      });
    });
  }

  verifyWithCode(
    forms.totpVerify,
    'totp-code',
    'mfa/totp/verify/',
    () => 'Authenticator app added. Signing in can now use its codes.',
  );

  addButtons.sms.addEventListener('click', () => open(forms.smsStart, addButtons.sms));

  async function sendSmsCode(phone: string) {
    await api.call('PUT', 'mfa/sms/request/', { body: { phone_number: phone } });
    smsNumber = phone;
    byId('sms-verify-intro').textContent = `We sent a 6-digit code to +${phone}. It works for 5 minutes.`;
  }

  forms.smsStart.addEventListener('submit', (event) => {
    event.preventDefault();
    const input = byId<HTMLInputElement>('sms-phone');
    const phone = digitsOf(input.value).replace(/^\+/, '');
    if (!/^\d{7,15}$/.test(phone)) {
      warn('Enter the number with its country code: 7 to 15 digits, e.g. 14155552671.', input);
      input.focus();
      return;
    }
    void act('phone', forms.smsStart, async () => {
      await sendSmsCode(phone);
      forms.smsStart.hidden = true;
      forms.smsVerify.hidden = false;
      say(`Code sent to +${phone}.`, forms.smsVerify);
      byId('sms-code').focus();
    });
  });
  byId('sms-resend').addEventListener('click', () =>
    act('phone', forms.smsVerify, async () => {
      await sendSmsCode(smsNumber);
      say(`A new code was sent to +${smsNumber}.`, forms.smsVerify);
      byId('sms-code').focus();
    }),
  );
  verifyWithCode(
    forms.smsVerify,
    'sms-code',
    'mfa/sms/verify/',
    () => `Phone +${smsNumber} added. Signing in can now send it codes.`,
  );

  // Backup codes: shown once, downloadable, gone from the page when put away.

  backupCreate.addEventListener('click', () =>
    act('other', backupCreate.parentElement ?? undefined, async () => {
      const { backup_codes } = await api.call<{ backup_codes: string[] }>('POST', 'mfa/recovery/');
      backupCodes = backup_codes;
      backupList.replaceChildren(...backup_codes.map((code) => el('li', {}, grouped(code))));
      backupBox.hidden = false;
      renderBackup(backup_codes.length);
      say('New backup codes made; any earlier ones no longer work.', backupList);
      byId('backup-codes-title').focus();
    }),
  );

  byId('backup-download').addEventListener('click', () => {
    const text = [
      `Backup codes for ${username()} at ${location.origin}`,
      `Made ${new Date().toISOString().slice(0, 10)}. Each code signs you in once; a new set cancels these.`,
      '',
      ...backupCodes.map((code) => grouped(code)),
      '',
    ].join('\n');
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
    const link = el('a', { href: url, download: 'backup-codes.txt' });
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  });

  function closeBackupCodes() {
    backupCodes = [];
    backupList.replaceChildren();
    backupBox.hidden = true;
  }

  byId('backup-done').addEventListener('click', () => {
    closeBackupCodes();
    clearNotices();
    backupCreate.focus();
  });

  return { show, hide, reload };
}
