import { createFactorAdding, FACTOR_NAME } from '../shared/add-factor.js';
import { ApiError } from '../shared/api-error.js';
import { createBackupCodesBox } from '../shared/backup-codes.js';
import { button, byId, closeOnEscape, el, formattedPhone, setTitle, timeAgo, whileBusy } from '../shared/dom.js';
import { dateTime, onLanguageChange, t } from '../shared/i18n.js';
import { placeOf, say, warn } from '../shared/notices.js';
import { type Api, Cancelled, type Factor, SessionEnded } from './api.js';
import { createDevicesPanel, type RememberedDevice } from './devices-panel.js';
import { createFactorMenu } from './factor-menu.js';
import { createLanguagePanel } from './language-panel.js';
import { describeError, type Step } from './messages.js';
import { createPasswordPanel } from './password-panel.js';
import { createRecoveryPanel, type RecoveryRequest } from './recovery-panel.js';

/** What each kind of factor is called, in the page's language. */
function typeLabel(type: Factor['type']): string {
  switch (type) {
    case 'webauthn':
      return t('account.factors.types.webauthn');
    case 'totp':
      return t('account.factors.types.totp');
    case 'sms':
      return t('account.factors.types.sms');
    case 'email':
      return t('account.factors.types.email');
  }
}

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
  const parts = [
    factor.authenticator
      ? t('account.factors.passkeyOn', { authenticator: factor.authenticator })
      : typeLabel('webauthn'),
  ];
  parts.push(factor.synced ? t('account.factors.synced') : t('account.factors.oneDevice'));
  parts.push(factor.can_sign_in_alone ? t('account.factors.signsInAlone') : t('account.factors.secondStepOnly'));
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
  /** What the list and the backup codes were last drawn from, to draw them again in another language. */
  let drawn: { factors: Factor[]; emailCodes: EmailCodes; backup: BackupState } | undefined;

  /** Runs an action of the page; any error becomes a message, never an exception. */
  async function act(step: Step, container: HTMLElement | undefined, action: () => Promise<void>) {
    await whileBusy(container, async () => {
      try {
        await action();
      } catch (error) {
        if (error instanceof SessionEnded) return; // the sign-in screen says so
        if (error instanceof Cancelled) {
          if (api.isSignedIn) warn(t('account.errors.nothingChanged'), container);
          return;
        }
        if (error instanceof ApiError && error.code === 'not_found') {
          // The list is drawn again without it: the message goes above the list, not in a row that is gone.
          await reload();
          warn(describeError(error, step), factorsTitle);
          return;
        }
        warn(describeError(error, step), placeOf(error, container ?? section));
      }
    });
  }

  /** `afterBackupCode`: the sign-in spent a backup code, so the page says how many are left. */
  async function show({ afterBackupCode = false } = {}): Promise<void> {
    // The stored language first, so that the account appears in it.
    await languagePanel.load();
    section.hidden = false;
    setTitle(() => t('account.documentTitle.account'));
    adding.closeForms();
    backupBox.close();
    let left: BackupState | undefined;
    await act('other', section, async () => {
      left = await reload();
    });
    title.focus();
    if (afterBackupCode && typeof left === 'number') {
      const used = t('account.backup.signedInWithCode', { count: left });
      if (left === 0) warn(t('account.backup.signedInWithLast'), backupSummary);
      else say(left <= 3 ? `${used} ${t('account.backup.createSoon')}` : used, backupSummary);
    }
  }

  function hide(): void {
    section.hidden = true;
    drawn = undefined;
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
    drawn = { factors, emailCodes, backup };
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
    summary.textContent = factors.length > 0 ? t('account.summary.on') : t('account.summary.off');
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
      ? phone.phone_number
        ? t('account.factors.phoneHeldEnding', { ending: phone.phone_number.slice(-4) })
        : t('account.factors.phoneHeld')
      : '';
  }

  function renderFactor(factor: Factor, isOnlyOne: boolean, email: string): HTMLLIElement {
    const quoted = ` ${t('account.factors.quoted', { name: factor.name })}`;
    const kind =
      factor.type === 'sms' && factor.phone_number
        ? t('account.factors.smsTo', { phone: formattedPhone(factor.phone_number) })
        : factor.type === 'email' && email
          ? t('account.factors.emailTo', { email })
          : factor.type === 'webauthn'
            ? passkeyKind(factor)
            : typeLabel(factor.type);
    /** "2 minutes ago", with the date and time for a pointer's tooltip. */
    const when = (at: string) => el('time', { datetime: at, title: dateTime(new Date(at)) }, timeAgo(new Date(at)));
    const rename = button(t('account.factors.rename'), quoted);
    const makeDefault = button(t('account.factors.makeDefault'), quoted);
    const remove = button(t('account.factors.remove'), quoted, 'danger');
    rename.dataset.action = 'rename';
    remove.dataset.action = 'remove';

    const nameInput = el('input', { id: `name-${factor.id}`, maxlength: '64', autocomplete: 'off' });
    nameInput.value = factor.name;
    const renameForm = el(
      'form',
      { class: 'factor-form', hidden: '' },
      el(
        'div',
        { class: 'field' },
        el('label', { for: nameInput.id }, t('account.factors.newName', { name: factor.name })),
        nameInput,
      ),
      el(
        'div',
        { class: 'actions' },
        el('button', { type: 'submit' }, t('account.factors.save')),
        el('button', { type: 'button', class: 'secondary', 'data-cancel': '' }, t('account.factors.cancel')),
      ),
    );
    const confirmRemove = el('button', { type: 'button', class: 'danger confirm' }, t('account.factors.confirmRemove'));
    const keep = el('button', { type: 'button', class: 'secondary', 'data-cancel': '' }, t('account.factors.keep'));
    const consequence = isOnlyOne
      ? ` ${t('account.factors.removeOnlyOne')}`
      : factor.is_default
        ? ` ${t('account.factors.removeDefault')}`
        : '';
    const confirmBox = el(
      'div',
      { class: 'factor-form', hidden: '' },
      el('p', {}, t('account.factors.removeQuestion', { name: factor.name }), consequence),
      el('div', { class: 'actions' }, confirmRemove, keep),
    );
    const actions = el(
      'div',
      { class: 'actions', id: `actions-${factor.id}` },
      rename,
      ...(factor.is_default ? [] : [makeDefault]),
      remove,
    );
    const menu = createFactorMenu(actions, t('account.factors.manage'), quoted);
    const item = el(
      'li',
      { 'data-factor-id': factor.id },
      el(
        'div',
        { class: 'factor-head' },
        el('span', { class: 'factor-name' }, factor.name),
        ...(factor.is_default ? [el('span', { class: 'badge' }, t('account.factors.default'))] : []),
      ),
      el('p', { class: 'factor-type' }, kind),
      el(
        'p',
        { class: 'factor-dates' },
        `${t('account.factors.added')} `,
        when(factor.created_at),
        ' · ',
        ...(factor.last_used_at
          ? [`${t('account.factors.lastUsed')} `, when(factor.last_used_at)]
          : [t('account.factors.neverUsed')]),
      ),
      el('p', { class: 'notice', hidden: '' }),
      menu.element,
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
      menu.focusTarget(rename).focus();
    };
    renameForm.querySelector('[data-cancel]')?.addEventListener('click', cancelRename);
    closeOnEscape(renameForm, cancelRename);
    renameForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const name = nameInput.value.trim();
      if (!FACTOR_NAME.test(name)) {
        warn(t('account.factors.nameLength'), item);
        nameInput.focus();
        return;
      }
      void act('other', renameForm, async () => {
        await api.call('PATCH', `mfa/factors/${encodeURIComponent(factor.id)}/`, { body: { name } });
        await reload();
        say(t('account.factors.renamed', { name }), factorNamed(factor.id));
        focusInFactor(factor.id, 'rename');
      });
    });
    makeDefault.addEventListener('click', () =>
      act('other', actions, async () => {
        await api.call('PATCH', `mfa/factors/${encodeURIComponent(factor.id)}/`, { body: { is_default: true } });
        await reload();
        say(t('account.factors.madeDefault', { name: factor.name }), factorNamed(factor.id));
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
      menu.focusTarget(remove).focus();
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
            menu.focusTarget(remove).focus();
          }
          throw error;
        }
        await reload();
        say(
          isOnlyOne
            ? t('account.factors.removedLast', { name: factor.name })
            : t('account.factors.removed', { name: factor.name }),
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

  /** Focuses the factor's action, or its menu button where the actions hide behind one (a narrow screen). */
  function focusInFactor(id: string, action: string) {
    const target = factorNamed(id)?.querySelector<HTMLElement>(`[data-action="${action}"]`);
    const menu = factorNamed(id)?.querySelector<HTMLElement>('[data-action="menu"]');
    (menu && getComputedStyle(menu).display !== 'none' ? menu : target)?.focus();
  }

  function renderBackup(state: BackupState) {
    // Hidden rather than disabled: a button disabled while busy is enabled again afterwards. Hidden
    // too while a new set is on screen: a click there would cancel the codes being saved.
    backupCreate.hidden = state === 'off' || backupBox.isOpen;
    backupCreate.textContent =
      typeof state === 'number' && state > 0 ? t('account.backup.createNew') : t('account.backup.create');
    backupSummary.textContent =
      state === 'off'
        ? t('account.backup.off')
        : state === 'unknown'
          ? t('account.backup.unknown')
          : state === 0
            ? t('account.backup.none')
            : t('account.backup.left', { count: state });
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
      say(`${message} ${t('account.backup.saveNow')}`, backupBox.list);
    },
  });

  const passwordPanel = createPasswordPanel(api, act, reload);
  const devicesPanel = createDevicesPanel(api, act, reload);
  const recoveryPanel = createRecoveryPanel(api, act);
  const languagePanel = createLanguagePanel(api, act);
  // Another language: what the page drew is drawn again from what it last had (forms it had open close).
  onLanguageChange(() => {
    if (section.hidden || !drawn) return;
    renderFactors(drawn.factors, drawn.emailCodes);
    renderBackup(drawn.backup);
  });
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
    if (drawn) drawn.backup = codes.length;
    renderBackup(codes.length);
  }

  backupCreate.addEventListener('click', () =>
    act('other', backupCreate.parentElement ?? undefined, async () => {
      const { backup_codes } = await api.call<{ backup_codes: string[] }>('POST', 'mfa/recovery/');
      showBackupCodes(backup_codes);
      say(t('account.backup.made'), backupBox.list);
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
    /** The browser's languages again, once the account is left. */
    forgetLanguage: () => languagePanel.forget(),
    get phoneEnding() {
      return phoneEnding;
    },
  };
}
