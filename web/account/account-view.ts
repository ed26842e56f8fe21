import { createFactorAdding, FACTOR_NAME } from '../shared/add-factor.js';
import { ApiError } from '../shared/api-error.js';
import { createBackupCodesBox } from '../shared/backup-codes.js';
import { button, byId, closeOnEscape, el, formattedPhone, timeAgo, whileBusy } from '../shared/dom.js';
import { placeOf, say, warn } from '../shared/notices.js';
import { type Api, Cancelled, type Factor, SessionEnded } from './api.js';
import { createDevicesPanel, type RememberedDevice } from './devices-panel.js';
import { describeError, type Step } from './messages.js';
import { createPasswordPanel } from './password-panel.js';
import { createRecoveryPanel, type RecoveryRequest } from './recovery-panel.js';

const TYPE_LABELS: Record<Factor['type'], string> = {
  webauthn: 'Passkey',
  totp: 'Authenticator app',
  sms: 'SMS codes',
  email: 'Codes by email',
};

/** GET /mfa/email-factor/: whether the service offers email codes, and the verified address ("" when none). */
interface EmailCodes {
  offered: boolean;
  email: string;
}

/** Unused backup codes; 'unknown' when telling would need a fresher login; 'off' without MFA. */
type BackupState = number | 'unknown' | 'off';

/**
 * What a passkey is (CONTRACT §19): its authenticator when known, synced or on one device, and
 * whether it signs in alone (a discoverable credential) or only as a second step.
 */
function passkeyKind(factor: Factor): string {
  const parts = [factor.authenticator ? `Passkey on ${factor.authenticator}` : TYPE_LABELS.webauthn];
  parts.push(factor.synced ? 'synced across your devices' : 'on one device');
  parts.push(factor.can_sign_in_alone ? 'signs in alone' : 'second step only');
  return parts.join(' · ');
}

/** The signed-in part: the factors, adding one, backup codes. */
export function createAccountView(api: Api, username: () => string) {
  const section = byId('account');
  const title = byId('account-title');
  const summary = byId('mfa-summary');
  const list = byId('factor-list');
  const none = byId('no-factors');
  const factorsTitle = byId('factors-title');
  const backupSummary = byId('backup-summary');
  const backupCreate = byId<HTMLButtonElement>('backup-create');
  const phoneHeld = byId('phone-held');
  /** How many ways to verify the account had when last shown: the first one added brings backup codes. */
  let factorCount = 0;
  /** The last 4 digits of the account's phone, when it has one: the sign-in's SMS step names it. */
  let phoneEnding: string | undefined;

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
        warn(describeError(error, step), placeOf(error, container ?? section));
        if (error instanceof ApiError && error.code === 'not_found') await reload();
      }
    });
  }

  /** `afterBackupCode`: the sign-in spent a backup code, so the page says how many are left. */
  async function show({ afterBackupCode = false } = {}): Promise<void> {
    section.hidden = false;
    document.title = 'Sign-in security · Account security';
    adding.closeForms();
    backupBox.close();
    let left: BackupState | undefined;
    await act('other', section, async () => {
      left = await reload();
    });
    title.focus();
    if (afterBackupCode && typeof left === 'number') {
      const count = left === 1 ? '1 backup code is' : `${left} backup codes are`;
      const advice = left <= 3 ? ' Create a new set soon.' : '';
      if (left === 0) warn('You signed in with your last backup code. Create a new set now.', backupSummary);
      else say(`You signed in with a backup code: ${count} left.${advice}`, backupSummary);
    }
  }

  function hide(): void {
    section.hidden = true;
    adding.closeForms();
    backupBox.close();
    list.replaceChildren();
  }

  /** Everything from the service again; answers the backup codes left. */
  async function reload(): Promise<BackupState> {
    // The factors first: without one there are no backup codes to ask about (the call would fail).
    const [{ factors }, password, { devices }, recovery, emailCodes] = await Promise.all([
      api.call<{ factors: Factor[] }>('GET', 'mfa/factors/'),
      api.call<{ has_password: boolean }>('GET', 'mfa/password/'),
      api.call<{ devices: RememberedDevice[] }>('GET', 'mfa/devices/'),
      api.call<RecoveryRequest>('GET', 'mfa/recovery-request/'),
      api.call<EmailCodes>('GET', 'mfa/email-factor/'),
    ]);
    recoveryPanel.render(recovery);
    const backup = factors.length > 0 ? await backupState() : 'off';
    renderFactors(factors, emailCodes);
    devicesPanel.render(devices);
    renderBackup(backup);
    passwordPanel.render(password.has_password, factors.filter((factor) => factor.type === 'webauthn').length);
    return backup;
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

  function renderFactors(factors: Factor[], emailCodes: EmailCodes) {
    factorCount = factors.length;
    summary.textContent =
      factors.length > 0
        ? 'Two-step verification is on: after your password, signing in asks for your default way to verify (you can choose another of yours).'
        : 'Two-step verification is off: your password alone signs you in.';
    none.hidden = factors.length > 0;
    // The default first: it is what signing in asks for.
    const ordered = [...factors].sort((a, b) => Number(b.is_default) - Number(a.is_default));
    list.replaceChildren(...ordered.map((factor) => renderFactor(factor, factors.length === 1, emailCodes.email)));
    // One phone per account: the way to another number is removing this one.
    const phone = factors.find((factor) => factor.type === 'sms');
    phoneEnding = phone?.phone_number?.slice(-4);
    // Email codes where the service offers them, to the account's verified address, once.
    const canAddEmail =
      emailCodes.offered && emailCodes.email !== '' && !factors.some((factor) => factor.type === 'email');
    adding.describeEmail(emailCodes.email);
    adding.offer([
      'webauthn',
      'totp',
      ...(phone ? [] : (['sms'] as const)),
      ...(canAddEmail ? (['email'] as const) : []),
    ]);
    phoneHeld.hidden = !phone;
    phoneHeld.textContent = phone
      ? `You already have a phone${phone.phone_number ? ` (ending ${phone.phone_number.slice(-4)})` : ''}. Remove it to add another number.`
      : '';
  }

  function renderFactor(factor: Factor, isOnlyOne: boolean, email: string): HTMLLIElement {
    const quoted = ` “${factor.name}”`;
    const kind =
      factor.type === 'sms' && factor.phone_number
        ? `${TYPE_LABELS.sms} to ${formattedPhone(factor.phone_number)}`
        : factor.type === 'email' && email
          ? `${TYPE_LABELS.email} to ${email}`
          : factor.type === 'webauthn'
            ? passkeyKind(factor)
            : TYPE_LABELS[factor.type];
    /** "2 minutes ago", with the date and time for a pointer's tooltip. */
    const when = (at: string) =>
      el('time', { datetime: at, title: dateTimeFormat.format(new Date(at)) }, timeAgo(new Date(at)));
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
    const keep = el('button', { type: 'button', class: 'secondary', 'data-cancel': '' }, 'Keep it');
    const confirmBox = el(
      'div',
      { class: 'factor-form', hidden: '' },
      el(
        'p',
        {},
        `Remove${quoted}? Signing in will no longer accept it.`,
        isOnlyOne
          ? ' It is your only way to verify: two-step verification turns off.'
          : factor.is_default
            ? ' Another of your ways to verify becomes the default.'
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
      el(
        'p',
        { class: 'factor-dates' },
        'Added ',
        when(factor.created_at),
        ' · Last used ',
        factor.last_used_at ? when(factor.last_used_at) : 'never',
      ),
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
    const cancelRename = () => {
      renameForm.hidden = true;
      nameInput.value = factor.name;
      rename.focus();
    };
    renameForm.querySelector('[data-cancel]')?.addEventListener('click', cancelRename);
    closeOnEscape(renameForm, cancelRename);
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
    const keepIt = () => {
      confirmBox.hidden = true;
      remove.focus();
    };
    keep.addEventListener('click', keepIt);
    closeOnEscape(confirmBox, keepIt);
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
    // Hidden rather than disabled: a button disabled while busy is enabled again afterwards. Hidden
    // too while a new set is on screen: a click there would cancel the codes being saved.
    backupCreate.hidden = state === 'off' || backupBox.isOpen;
    backupCreate.textContent =
      typeof state === 'number' && state > 0 ? 'Create new backup codes' : 'Create backup codes';
    backupSummary.textContent =
      state === 'off'
        ? 'Backup codes come with two-step verification: add a way to verify first.'
        : state === 'unknown'
          ? 'Single-use codes for the day you cannot use your other factors. A new set cancels any earlier one.'
          : state === 0
            ? 'You have no unused backup codes. Create a set and keep it somewhere safe.'
            : `You have ${state} unused backup code${state === 1 ? '' : 's'}. A new set cancels these.`;
  }

  // Adding a factor (web/shared/add-factor.ts): the API under mfa/, and the list shows the new one.
  const adding = createFactorAdding({
    enrol: (path, body) => api.call('PUT', `mfa/${path}`, { body }),
    act,
    async added(message) {
      const wasFirst = factorCount === 0;
      await reload();
      const codes = wasFirst ? await offerFirstBackupCodes() : undefined;
      if (!codes) {
        say(message, factorsTitle);
        factorsTitle.focus();
        return;
      }
      showBackupCodes(codes);
      say(`${message} Save these backup codes now: if you lose it, a code signs you in instead.`, backupBox.list);
    },
  });

  const passwordPanel = createPasswordPanel(api, act, reload);
  const devicesPanel = createDevicesPanel(api, act, reload);
  const recoveryPanel = createRecoveryPanel(api, act);
  // Back from the notice mail in another tab: the request it tells of shows, with its Cancel button.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible' || section.hidden || !api.isSignedIn) return;
    void act('other', undefined, async () => {
      recoveryPanel.render(await api.call<RecoveryRequest>('GET', 'mfa/recovery-request/', { stepUp: false }));
    });
  });

  // Backup codes: shown once, downloadable, gone from the page when put away.
  const backupBox = createBackupCodesBox({
    owner: username,
    saved() {
      backupCreate.hidden = false;
      backupCreate.focus();
    },
  });

  function showBackupCodes(codes: string[]) {
    backupBox.show(codes);
    renderBackup(codes.length);
  }

  backupCreate.addEventListener('click', () =>
    act('other', backupCreate.parentElement ?? undefined, async () => {
      const { backup_codes } = await api.call<{ backup_codes: string[] }>('POST', 'mfa/recovery/');
      showBackupCodes(backup_codes);
      say('New backup codes made; any earlier ones no longer work.', backupBox.list);
    }),
  );

  /**
   * Issue 29: the first way to verify brings the first backup codes at once (the login that added
   * it may make them without signing in again). Undefined when the service says otherwise.
   */
  async function offerFirstBackupCodes(): Promise<string[] | undefined> {
    try {
      return (await api.call<{ backup_codes: string[] }>('POST', 'mfa/recovery/', { stepUp: false })).backup_codes;
    } catch (error) {
      // Too late for this login (or codes already made): "Create backup codes" stays on offer.
      if (error instanceof ApiError && error.status === 401) return undefined;
      throw error;
    }
  }

  return {
    show,
    hide,
    reload,
    get phoneEnding() {
      return phoneEnding;
    },
  };
}
