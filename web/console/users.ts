// Users (CONTRACT §21): find one by the start of a username or email, a page at a time; see their
// factors, logins, remembered devices and recent events; reset their MFA, end their sessions, or
// delete them, each after a confirmation that names them.
import { byId, closeOnEscape, el, timeAgo, whileBusy } from '../shared/dom.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { copyOnClick } from './copy-field.js';

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
    question: (name: string) =>
      `Unlock ${name}? Their wrong passwords and codes are forgotten, and they can try again at once.`,
    confirm: (name: string) => `Yes, unlock ${name}`,
    call: (api: ConsoleApi, id: string) => api.call('POST', `users/${id}/unlock`),
    done: (name: string) => `${name} can sign in again.`,
  },
  invite: {
    question: (name: string) =>
      `Send ${name} an invite? The link lets whoever opens it make ${name}’s first passkey and sign in with it; an earlier link stops working.`,
    confirm: (name: string) => `Yes, make an invite for ${name}`,
    call: (api: ConsoleApi, id: string) => api.call('POST', `users/${id}/invite`),
    done: (name: string) => `An invite for ${name} is made: send them the link below.`,
  },
  'reset-mfa': {
    question: (name: string) =>
      `Reset ${name}’s MFA? Every way to verify and every backup code of ${name} is removed, and all of ${name}’s sessions end.`,
    confirm: (name: string) => `Yes, reset ${name}’s MFA`,
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}/mfa`),
    done: (name: string) => `${name}’s MFA is reset: they sign in with their password alone and can add a new factor.`,
  },
  'end-sessions': {
    question: (name: string) =>
      `End all of ${name}’s sessions? Every app signs ${name} out, and their remembered devices are forgotten.`,
    confirm: (name: string) => `Yes, end ${name}’s sessions`,
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}/sessions`),
    done: (name: string) => `All of ${name}’s sessions have ended.`,
  },
  delete: {
    question: (name: string) =>
      `Delete ${name}? The account and everything about it is removed; this cannot be undone.`,
    confirm: (name: string) => `Yes, delete ${name}`,
    call: (api: ConsoleApi, id: string) => api.call('DELETE', `users/${id}`),
    done: (name: string) => `${name} is deleted.`,
  },
} as const;

export type UserAction = keyof typeof ACTIONS;

const FACTOR_WORDS: Record<string, string> = { sms: 'SMS', totp: 'Authenticator app', webauthn: 'Passkey' };
const METHOD_WORDS: Record<string, string> = {
  pwd: 'password',
  sms: 'SMS code',
  otp: 'authenticator app',
  hwk: 'passkey',
  swk: 'passkey',
  mfa: 'second factor',
};

/** "mfa_disabled · reset_by_operator" in words: "MFA disabled: reset by operator". */
function eventWords(event: SecurityEvent): string {
  const words = (text: string) =>
    text
      .replaceAll('_', ' ')
      .replace(/\bmfa\b/g, 'MFA')
      .replace(/\bsms\b/g, 'SMS');
  const type = words(event.type);
  return `${type.charAt(0).toUpperCase()}${type.slice(1)}: ${words(event.outcome)}`;
}

/** "Authenticator app, the default"; the type is left out when the name says it already. */
function factorWords(factor: { type: string; name: string; is_default: boolean }): string {
  const type = FACTOR_WORDS[factor.type] ?? factor.type;
  const words = [factor.name === type ? '' : type, factor.is_default ? 'the default' : ''].filter(Boolean);
  return words.join(', ') || 'not the default';
}

function when(iso: string): HTMLElement {
  const date = new Date(iso);
  return el('time', { datetime: iso, title: date.toLocaleString() }, timeAgo(date));
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
            ` ${[user.email, user.mfa_enabled ? 'MFA on' : 'MFA off', user.is_operator ? 'operator' : '']
              .filter(Boolean)
              .join(' · ')}`,
          ),
        ),
      );
    }
    if (!append && page.users.length === 0) results.append(el('li', { class: 'hint' }, 'No user matches.'));
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
      ? `Too many wrong passwords or codes: sign-ins wait until ${new Date(user.locked_until).toLocaleTimeString()}.`
      : '';
    byId('user-unlock').hidden = user.locked_until === null;
    // An invite makes an account's first passkey: only for an account without second factors.
    byId('user-invite').hidden = user.mfa_enabled;
    byId('user-facts').textContent = [
      user.email ?? 'no email address',
      user.mfa_enabled ? 'MFA on' : 'MFA off',
      user.is_operator ? 'operator' : '',
      `created ${new Date(user.created_at).toLocaleDateString()}`,
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
          factor.last_used_at ? el('span', {}, 'last used ', when(factor.last_used_at)) : 'never used',
        ),
      ),
      'No way to verify: the password alone signs in.',
    );
    listOrNone(
      'user-sessions',
      user.sessions.map((login) =>
        el(
          'li',
          {},
          // The password grant without client credentials names no registered client.
          el('strong', {}, login.client_name ?? (login.client_id === 'public' ? 'Password grant' : login.client_id)),
          ` · signed in `,
          when(login.signed_in_at),
          ` with ${login.amr.map((method) => METHOD_WORDS[method] ?? method).join(' and ')} · last active `,
          when(login.last_refreshed_at),
        ),
      ),
      'No session.',
    );
    listOrNone(
      'user-devices',
      user.remembered_devices.map((device) =>
        el('li', {}, el('strong', {}, device.browser), ' · last used ', when(device.last_used_at)),
      ),
      'No remembered device.',
    );
    listOrNone(
      'user-events',
      events.map((event) =>
        el(
          'li',
          {},
          when(event.occurred_at),
          ` · ${eventWords(event)}${event.client_address ? ` · from ${event.client_address}` : ''}`,
        ),
      ),
      'No event.',
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
      say('You signed in again. Confirm to go on.', confirmBox);
    },
  };
}
