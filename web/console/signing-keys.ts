// Signing keys (CONTRACT §21): every key, newest first, with what it does now; a rotation after a
// confirmation (the new keys sign at once; the old ones stay published while their tokens live).
import { byId, closeOnEscape, el, whileBusy } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { shortDateTime } from './formats.js';

interface SigningKey {
  kid: string;
  alg: string;
  created_at: string;
  state: 'active' | 'published' | 'retired';
}

const STATE_WORDS: Record<SigningKey['state'], () => string> = {
  active: () => t('console.keys.states.active'),
  published: () => t('console.keys.states.published'),
  retired: () => t('console.keys.states.retired'),
};

export function createSigningKeysView(
  api: ConsoleApi,
  hooks: { refused(error: unknown): boolean; describe(error: unknown): string },
) {
  const table = byId('key-list');
  const rotate = byId('key-rotate');
  const confirm = byId('key-rotate-confirm');

  async function show(): Promise<void> {
    const { keys } = await api.call<{ keys: SigningKey[] }>('GET', 'signing-keys');
    table.replaceChildren(
      ...keys.map((key) =>
        el(
          'tr',
          {},
          // The start tells keys apart (as in a token's header); the whole of it is the cell's title.
          el('td', { class: 'kid', title: key.kid }, `${key.kid.slice(0, 8)}…`),
          el('td', {}, key.alg),
          el('td', {}, STATE_WORDS[key.state]()),
          el('td', {}, shortDateTime(new Date(key.created_at))),
        ),
      ),
    );
  }

  function close(): void {
    confirm.hidden = true;
    rotate.focus();
  }

  rotate.addEventListener('click', () => {
    confirm.hidden = false;
    byId('key-rotate-yes').focus();
  });
  byId('key-rotate-no').addEventListener('click', close);
  closeOnEscape(confirm, close);
  byId('key-rotate-yes').addEventListener(
    'click',
    () =>
      void whileBusy(confirm, async () => {
        try {
          await api.call('POST', 'signing-keys');
        } catch (error) {
          if (!hooks.refused(error)) warn(hooks.describe(error), confirm);
          return;
        }
        confirm.hidden = true;
        await show();
        say(t('console.keys.rotated'), table);
        rotate.focus();
      }),
  );

  return { show };
}
