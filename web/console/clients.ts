// Clients (CONTRACT §18, §21): every client, a new one, every setting of one edited, a secret
// rotated; a secret is shown once, when it is made. The console's own client is built in: shown,
// never edited here (the service writes it again at every start).
import { byId, closeOnEscape, el, whileBusy } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { copyOnClick } from './copy-field.js';

interface Client {
  client_id: string;
  name: string;
  mfa_challenge: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  token_endpoint_auth_method: string;
  allowed_scopes: string;
  web_origins: string[];
  id_token_signed_response_alg: string;
  mfa_policy: string;
  remember_device_days: number;
  client_secret?: string;
}

/** The form's fields, each named as the API spells the setting. */
const LIST_FIELDS = ['redirect_uris', 'post_logout_redirect_uris', 'web_origins'] as const;
const TEXT_FIELDS = [
  'name',
  'token_endpoint_auth_method',
  'allowed_scopes',
  'id_token_signed_response_alg',
  'mfa_policy',
  'mfa_challenge',
] as const;

const field = <T extends HTMLElement>(name: string) => byId<T>(`client-${name.replaceAll('_', '-')}`);

export function createClientsView(
  api: ConsoleApi,
  hooks: { refused(error: unknown): boolean; describe(error: unknown): string; consoleClientId: string },
) {
  const list = byId('client-list');
  const form = byId<HTMLFormElement>('client-form');
  const secretBox = byId('client-secret-box');
  const rotateBox = byId('client-rotate-confirm');
  /** The client being edited; undefined while the form makes a new one. */
  let editing: Client | undefined;
  let opener: HTMLElement | undefined;

  async function show(): Promise<void> {
    const { clients } = await api.call<{ clients: Client[] }>('GET', 'clients');
    list.replaceChildren(
      ...clients.map((client) => {
        const isBuiltIn = client.client_id === hooks.consoleClientId;
        const actions = el('td', {});
        if (isBuiltIn) actions.append(el('span', { class: 'hint' }, t('console.clients.builtIn')));
        else {
          const edit = el(
            'button',
            { type: 'button', class: 'secondary' },
            t('console.clients.edit'),
            el('span', { class: 'visually-hidden' }, ` ${client.name}`),
          );
          edit.addEventListener('click', () => openForm(client, edit));
          actions.append(edit);
        }
        return el(
          'tr',
          {},
          el('th', { scope: 'row' }, client.name),
          el('td', { class: 'id' }, client.client_id),
          el(
            'td',
            {},
            client.token_endpoint_auth_method === 'none'
              ? t('console.clients.public')
              : t('console.clients.confidential'),
          ),
          el('td', {}, client.redirect_uris.join(' ') || t('console.common.none')),
          actions,
        );
      }),
    );
  }

  /** Opens the form for `client`, or empty (the defaults) for a new one. */
  function openForm(client: Client | undefined, from: HTMLElement): void {
    clearNotices();
    editing = client;
    opener = from;
    secretBox.hidden = true;
    rotateBox.hidden = true;
    byId('client-form-title').textContent = client
      ? t('console.clients.editTitle', { name: client.name })
      : t('console.clients.new');
    byId('client-save').textContent = client ? t('console.clients.save') : t('console.clients.create');
    byId('client-rotate').hidden = !client || client.token_endpoint_auth_method === 'none';
    for (const name of TEXT_FIELDS) field<HTMLInputElement>(name).value = client?.[name] ?? defaults[name];
    for (const name of LIST_FIELDS) field<HTMLTextAreaElement>(name).value = client?.[name].join('\n') ?? '';
    field<HTMLInputElement>('remember_device_days').value = String(client?.remember_device_days ?? 0);
    form.hidden = false;
    field('name').focus();
  }

  /** What the form holds, as the API's body. */
  function settings(): Record<string, unknown> {
    const body: Record<string, unknown> = {};
    for (const name of TEXT_FIELDS) body[name] = field<HTMLInputElement>(name).value.trim();
    for (const name of LIST_FIELDS) body[name] = field<HTMLTextAreaElement>(name).value.split(/\s+/).filter(Boolean);
    body.remember_device_days = Number(field<HTMLInputElement>('remember_device_days').value || '0');
    return body;
  }

  function closeForm(): void {
    form.hidden = true;
    rotateBox.hidden = true;
    opener?.focus();
    opener = undefined;
  }

  /** A secret, shown this once. */
  function showSecret(client: Client, secret: string): void {
    byId('client-secret-for').textContent = t('console.clients.secretFor', { name: client.name, id: client.client_id });
    byId<HTMLInputElement>('client-secret').value = secret;
    secretBox.hidden = false;
    byId('client-secret').focus();
  }

  async function save(): Promise<void> {
    let saved: Client;
    try {
      saved = editing
        ? await api.call<Client>('PATCH', `clients/${encodeURIComponent(editing.client_id)}`, settings())
        : await api.call<Client>('POST', 'clients', settings());
    } catch (error) {
      if (!hooks.refused(error)) warn(hooks.describe(error), form);
      return;
    }
    const wasNew = editing === undefined;
    form.hidden = true;
    opener = undefined;
    await show();
    say(
      wasNew ? t('console.clients.created', { name: saved.name }) : t('console.clients.saved', { name: saved.name }),
      list,
    );
    if (saved.client_secret) showSecret(saved, saved.client_secret);
    else byId('clients-title').focus();
  }

  async function rotate(): Promise<void> {
    const client = editing;
    if (!client) return;
    let answer: { client_secret: string };
    try {
      answer = await api.call('POST', `clients/${encodeURIComponent(client.client_id)}/secret`);
    } catch (error) {
      if (!hooks.refused(error)) warn(hooks.describe(error), rotateBox);
      return;
    }
    form.hidden = true;
    rotateBox.hidden = true;
    say(t('console.clients.rotated', { name: client.name }), list);
    showSecret(client, answer.client_secret);
  }

  const defaults: Record<(typeof TEXT_FIELDS)[number], string> = {
    name: '',
    token_endpoint_auth_method: 'client_secret_basic',
    allowed_scopes: 'openid profile offline_access',
    id_token_signed_response_alg: 'RS256',
    mfa_policy: 'optional',
    mfa_challenge: 'seed',
  };

  copyOnClick('client-secret-copy', 'client-secret', 'secret');
  const create = byId('client-new');
  create.addEventListener('click', () => openForm(undefined, create));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void whileBusy(form, save);
  });
  byId('client-cancel').addEventListener('click', closeForm);
  closeOnEscape(form, closeForm);
  byId('client-rotate').addEventListener('click', () => {
    if (!editing) return;
    byId('client-rotate-question').textContent = t('console.clients.rotateQuestion', { name: editing.name });
    byId('client-rotate-yes').textContent = t('console.clients.rotateConfirm', { name: editing.name });
    rotateBox.hidden = false;
    byId('client-rotate-yes').focus();
  });
  byId('client-rotate-yes').addEventListener('click', () => void whileBusy(rotateBox, rotate));
  const closeRotate = () => {
    rotateBox.hidden = true;
    byId('client-rotate').focus();
  };
  byId('client-rotate-no').addEventListener('click', closeRotate);
  closeOnEscape(rotateBox, closeRotate);

  return { show };
}
