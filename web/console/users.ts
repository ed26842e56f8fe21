// Users (CONTRACT §21): find one by the start of a username or email, a page at a time; see their
// factors, logins, remembered devices and recent events; reset their MFA, end their sessions, or
// delete them, each after a confirmation that names them.
import { byId, closeOnEscape, el, timeAgo, whileBusy } from '../shared/dom.js';
import { currentLanguage, t } from '../shared/i18n.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { copyOnClick } from './copy-field.js';
import { dateAndTime, dateOnly, listOf, timeOfDay, withNodes } from './formats.js';

interface UserSummary {
  id: string;
  username: string;
  email?: string;
  mfa_enabled: boolean;
  is_operator: boolean;
  created_at: string;
}

interface UserDetail extends UserSummary {
  locked_until: string | null;
  factors: { id: string; type: string; name: string; is_default: boolean; last_used_at: string | null }[];
  sessions: {
    id: string;
    client_name: string | null;
    client_id: string;
    amr: string[];
    signed_in_at: string;
    last_refreshed_at: string;
  }[];
  remembered_devices: { id: string; browser: string; last_used_at: string; expires_at: string }[];
}

interface SecurityEvent {
  id: string;
  occurred_at: string;
  type: string;
  outcome: string;
  client_address: string | null;
}

/** The changes an operator makes to a user, each confirmed by name. */
const ACTIONS = {
  unlock: {
    question: (name: string) => t('console.users.actions.unlock.question', { name }),
    confirm: (name: string) => t('console.users.actions.unlock.confirm', { name }),
    call: (api: ConsoleApi, id: string) => api.call('POST', `users/${id}/unlock`),
    done: (name: string) => t('console.users.actions.unlock.done', { name }),
  },
  invite: {
    question: (name: string) => t('console.users.actions.invite.question', { name }),
    confirm: (name: string) => t('console.users.actions.invite.confirm', { name }),
    call: (api: ConsoleApi, id: string) => api.call('POST', `users/${id}/invite`),
    done: (name: string) => t('console.users.actions.invite.done', { name }),
  },
  'reset-mfa': {
    question: (name: string) => t('console.users.actions.resetMfa.question', { name }),
    confirm: (name: string) => t('console.users.actions.resetMfa.confirm', { name }),
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}/mfa`),
    done: (name: string) => t('console.users.actions.resetMfa.done', { name }),
  },
  'end-sessions': {
    question: (name: string) => t('console.users.actions.endSessions.question', { name }),
    confirm: (name: string) => t('console.users.actions.endSessions.confirm', { name }),
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}/sessions`),
    done: (name: string) => t('console.users.actions.endSessions.done', { name }),
  },
  delete: {
    question: (name: string) => t('console.users.actions.delete.question', { name }),
    confirm: (name: string) => t('console.users.actions.delete.confirm', { name }),
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}`),
    done: (name: string) => t('console.users.actions.delete.done', { name }),
  },
} as const;

export type UserAction = keyof typeof ACTIONS;

// Functions, not constants: the words are looked up in the page's language when they are shown.
const FACTOR_WORDS: Record<string, () => string> = {
  sms: () => t('console.users.factorTypes.sms'),
  totp: () => t('console.users.factorTypes.totp'),
  webauthn: () => t('console.users.factorTypes.webauthn'),
  email: () => t('console.users.factorTypes.email'),
};
/** The names the service gives a factor when its person names none (src/mfa/factors/). */
const DEFAULT_NAMES: Record<string, string> = {
  sms: 'SMS',
  totp: 'Authenticator app',
  webauthn: 'Passkey',
  email: 'Email',
};
const METHOD_WORDS: Record<string, () => string> = {
  pwd: () => t('console.users.methods.pwd'),
  sms: () => t('console.users.methods.sms'),
  otp: () => t('console.users.methods.otp'),
  hwk: () => t('console.users.methods.hwk'),
  swk: () => t('console.users.methods.swk'),
  mfa: () => t('console.users.methods.mfa'),
};

/**
 * "mfa_disabled · reset_by_operator" in words: "MFA disabled: reset by operator". The type and
 * outcome are identifiers (the audit trail's, the API's): other languages show them as they are.
 */
function eventWords(event: SecurityEvent): string {
  if (currentLanguage() !== 'en') return `${event.type}: ${event.outcome}`;
  const words = (text: string) =>
    text
      .replaceAll('_', ' ')
      .replace(/\bmfa\b/g, 'MFA')
      .replace(/\bsms\b/g, 'SMS');
  const type = words(event.type);
  return `${type.charAt(0).toUpperCase()}${type.slice(1)}: ${words(event.outcome)}`;
}

/**
 * "Authenticator app, the default"; the type is left out when the name says it already, in the
 * page's language or as the service names a factor by default.
 */
function factorWords(factor: { type: string; name: string; is_default: boolean }): string {
  const type = FACTOR_WORDS[factor.type]?.() ?? factor.type;
  const isNamedByType = factor.name === type || factor.name === DEFAULT_NAMES[factor.type];
  const words = [isNamedByType ? '' : type, factor.is_default ? t('console.users.theDefault') : ''].filter(Boolean);
  return words.join(', ') || t('console.users.notTheDefault');
}

function when(iso: string): HTMLElement {
  const date = new Date(iso);
  return el('time', { datetime: iso, title: dateAndTime(date) }, timeAgo(date));
}

export function createUsersView(
  api: ConsoleApi,
  hooks: {
    /** Handles a refusal of the admin API (sign in again, not an operator …); true when it did. */
    refused(error: unknown, resume?: { userId: string; action: UserAction }): boolean;
    describe(error: unknown): string;
  },
) {
  const form = byId<HTMLFormElement>('user-search');
  const query = byId<HTMLInputElement>('user-query');
  const results = byId('user-results');
  const more = byId<HTMLButtonElement>('user-more');
  const detail = byId('user-detail');
  const confirmBox = byId('user-confirm');
  const confirmYes = byId<HTMLButtonElement>('user-confirm-yes');
  let nextAfter: string | undefined;
  let shown: UserDetail | undefined;
  let pending: UserAction | undefined;
  let opener: HTMLElement | undefined;

  async function search(append: boolean): Promise<void> {
    const params = new URLSearchParams({ q: query.value.trim(), limit: '20' });
    if (append && nextAfter) params.set('after', nextAfter);
    const page = await api.call<{ users: UserSummary[]; next_after?: string }>('GET', `users/search?${params}`);
    if (!append) results.replaceChildren();
    for (const user of page.users) {
      const open = el('button', { type: 'button', class: 'link result' }, el('strong', {}, user.username));
      open.addEventListener('click', () => void whileBusy(detail, () => openUser(user.id)));
      results.append(
        el(
          'li',
          {},
          open,
          el(
            'span',
            { class: 'hint' },
            ` ${[
              user.email,
              user.mfa_enabled ? t('console.users.mfaOn') : t('console.users.mfaOff'),
              user.is_operator ? t('console.users.operator') : '',
            ]
              .filter(Boolean)
              .join(' · ')}`,
          ),
        ),
      );
    }
    if (!append && page.users.length === 0) results.append(el('li', { class: 'hint' }, t('console.users.noMatch')));
    nextAfter = page.next_after;
    more.hidden = nextAfter === undefined;
  }

  async function openUser(userId: string): Promise<void> {
    try {
      const [user, { events }] = await Promise.all([
        api.call<UserDetail>('GET', `users/${userId}`),
        api.call<{ events: SecurityEvent[] }>('GET', `users/${userId}/events`),
      ]);
      shown = user;
      render(user, events.slice(0, 20));
      detail.hidden = false;
      byId('user-name').focus();
    } catch (error) {
      if (!hooks.refused(error)) warn(hooks.describe(error), results);
    }
  }

  function render(user: UserDetail, events: SecurityEvent[]): void {
    closeConfirm();
    byId('user-invite-box').hidden = true;
    byId('user-name').textContent = user.username;
    const locked = byId('user-locked');
    locked.hidden = user.locked_until === null;
    locked.textContent = user.locked_until
      ? t('console.users.locked', { time: timeOfDay(new Date(user.locked_until)) })
      : '';
    byId('user-unlock').hidden = user.locked_until === null;
    // An invite makes an account's first passkey: only for an account without second factors.
    byId('user-invite').hidden = user.mfa_enabled;
    byId('user-facts').textContent = [
      user.email ?? t('console.users.noEmail'),
      user.mfa_enabled ? t('console.users.mfaOn') : t('console.users.mfaOff'),
      user.is_operator ? t('console.users.operator') : '',
      t('console.users.created', { date: dateOnly(new Date(user.created_at)) }),
    ]
      .filter(Boolean)
      .join(' · ');
    listOrNone(
      'user-factors',
      user.factors.map((factor) =>
        el(
          'li',
          {},
          el('strong', {}, factor.name),
          ` · ${factorWords(factor)} · `,
          factor.last_used_at
            ? el('span', {}, ...withNodes(t('console.users.lastUsed'), { when: when(factor.last_used_at) }))
            : t('console.users.neverUsed'),
        ),
      ),
      t('console.users.noFactor'),
    );
    listOrNone(
      'user-sessions',
      user.sessions.map((login) =>
        el(
          'li',
          {},
          // The password grant without client credentials names no registered client.
          el(
            'strong',
            {},
            login.client_name ?? (login.client_id === 'public' ? t('console.users.passwordGrant') : login.client_id),
          ),
          ' · ',
          ...withNodes(
            t('console.users.signedIn', {
              methods: listOf(login.amr.map((method) => METHOD_WORDS[method]?.() ?? method)),
            }),
            { when: when(login.signed_in_at) },
          ),
          ' · ',
          ...withNodes(t('console.users.lastActive'), { when: when(login.last_refreshed_at) }),
        ),
      ),
      t('console.users.noSession'),
    );
    listOrNone(
      'user-devices',
      user.remembered_devices.map((device) =>
        el(
          'li',
          {},
          el('strong', {}, device.browser),
          ' · ',
          ...withNodes(t('console.users.lastUsed'), { when: when(device.last_used_at) }),
        ),
      ),
      t('console.users.noDevice'),
    );
    listOrNone(
      'user-events',
      events.map((event) =>
        el(
          'li',
          {},
          when(event.occurred_at),
          ` · ${eventWords(event)}${
            event.client_address ? ` · ${t('console.users.from', { address: event.client_address })}` : ''
          }`,
        ),
      ),
      t('console.users.noEvent'),
    );
  }

  /** The invite link, shown this once, with a button that copies it. */
  function showInvite(url: string): void {
    const box = byId('user-invite-box');
    byId<HTMLInputElement>('user-invite-url').value = url;
    box.hidden = false;
    byId('user-invite-url').focus();
  }

  function listOrNone(id: string, items: HTMLElement[], none: string): void {
    byId(id).replaceChildren(...(items.length > 0 ? items : [el('li', { class: 'hint' }, none)]));
  }

  /** Opens the confirmation of `action`, which names the user. */
  function ask(action: UserAction, from?: HTMLElement): void {
    if (!shown) return;
    pending = action;
    opener = from;
    byId('user-confirm-question').textContent = ACTIONS[action].question(shown.username);
    confirmYes.textContent = ACTIONS[action].confirm(shown.username);
    confirmBox.hidden = false;
    confirmYes.focus();
  }

  function closeConfirm(): void {
    confirmBox.hidden = true;
    pending = undefined;
    opener?.focus();
    opener = undefined;
  }

  async function carryOut(): Promise<void> {
    const user = shown;
    const action = pending;
    if (!user || !action) return;
    let answer: unknown;
    try {
      answer = await ACTIONS[action].call(api, user.id);
    } catch (error) {
      if (!hooks.refused(error, { userId: user.id, action })) warn(hooks.describe(error), confirmBox);
      return;
    }
    opener = undefined;
    if (action === 'delete') {
      detail.hidden = true;
      shown = undefined;
      await search(false);
      say(ACTIONS[action].done(user.username), form);
      return;
    }
    await openUser(user.id);
    say(ACTIONS[action].done(user.username), detail);
    if (action === 'invite') showInvite((answer as { invite_url: string }).invite_url);
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearNotices();
    void whileBusy(form, () =>
      search(false).catch((error) => void (hooks.refused(error) || warn(hooks.describe(error), query))),
    );
  });
  more.addEventListener('click', () => {
    void whileBusy(more.parentElement ?? undefined, () =>
      search(true).catch((error) => void (hooks.refused(error) || warn(hooks.describe(error), results))),
    );
  });
  for (const action of Object.keys(ACTIONS) as UserAction[]) {
    const opening = byId(`user-${action}`);
    opening.addEventListener('click', () => ask(action, opening));
  }
  confirmYes.addEventListener('click', () => void whileBusy(confirmBox, carryOut));
  copyOnClick('user-invite-copy', 'user-invite-url', 'link');
  byId('user-confirm-no').addEventListener('click', closeConfirm);
  closeOnEscape(confirmBox, closeConfirm);

  return {
    /** The first page of everyone; answers the error when the API refuses. */
    start: () => search(false),
    /** Back from a fresh sign-in that a change asked for: the user, and that change to confirm again. */
    async resume(userId: string, action: UserAction): Promise<void> {
      await openUser(userId);
      if (!shown || !(action in ACTIONS)) return;
      ask(action, byId(`user-${action}`));
      say(t('console.users.signedInAgain'), confirmBox);
    },
  };
}
