// Webhooks (CONTRACT §16, §21): the endpoints, one added (its secret shown once) or removed, and
// an endpoint's recent deliveries with their status, a done one sent again.
import { byId, closeOnEscape, el, timeAgo, whileBusy } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { copyOnClick } from './copy-field.js';
import { count } from './formats.js';

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  created_at: string;
  secret?: string;
}

interface Delivery {
  event_id: string;
  type: string;
  attempt: number;
  status: 'pending' | 'succeeded' | 'failed';
  response_status: number | null;
  attempted_at: string | null;
}

export function createWebhooksView(
  api: ConsoleApi,
  hooks: { refused(error: unknown): boolean; describe(error: unknown): string },
) {
  const list = byId('webhook-list');
  const form = byId<HTMLFormElement>('webhook-form');
  const removeBox = byId('webhook-remove-confirm');
  const deliveriesPanel = byId('webhook-deliveries');
  let removing: Endpoint | undefined;
  let opener: HTMLElement | undefined;
  let shown: Endpoint | undefined;

  /** Runs a call of a button in `place`; a refusal is shown there. */
  function act(place: HTMLElement, call: () => Promise<void>): void {
    void whileBusy(place, () =>
      call().catch((error) => {
        if (!hooks.refused(error)) warn(hooks.describe(error), place);
      }),
    );
  }

  async function show(): Promise<void> {
    const { webhooks } = await api.call<{ webhooks: Endpoint[] }>('GET', 'webhooks');
    list.replaceChildren(
      ...webhooks.map((endpoint) => {
        const deliveries = el(
          'button',
          { type: 'button', class: 'secondary' },
          t('console.webhooks.deliveries'),
          el('span', { class: 'visually-hidden' }, ` ${t('console.webhooks.toUrl', { url: endpoint.url })}`),
        );
        deliveries.addEventListener('click', () => act(list, () => showDeliveries(endpoint)));
        const remove = el(
          'button',
          { type: 'button', class: 'secondary' },
          t('console.webhooks.remove'),
          el('span', { class: 'visually-hidden' }, ` ${endpoint.url}`),
        );
        remove.addEventListener('click', () => askRemove(endpoint, remove));
        return el(
          'tr',
          {},
          el('td', { class: 'id' }, endpoint.url),
          el('td', {}, endpoint.events.join(', ')),
          el('td', { class: 'row-actions' }, deliveries, remove),
        );
      }),
    );
    byId('webhook-none').hidden = webhooks.length > 0;
  }

  async function showDeliveries(endpoint: Endpoint): Promise<void> {
    shown = endpoint;
    const { deliveries } = await api.call<{ deliveries: Delivery[] }>('GET', `webhooks/${endpoint.id}/deliveries`);
    byId('webhook-deliveries-title').textContent = t('console.webhooks.deliveriesTo', { url: endpoint.url });
    byId('webhook-delivery-list').replaceChildren(
      ...deliveries.slice(0, 50).map((delivery) => {
        const state = el(
          'td',
          {},
          delivery.status === 'pending'
            ? t('console.webhooks.waiting')
            : `${delivery.status === 'succeeded' ? t('console.webhooks.delivered') : t('console.webhooks.failed')}${delivery.response_status ? ` (${delivery.response_status})` : ''}`,
        );
        // The latest attempt of a done delivery can be sent again.
        const isLatest = deliveries.find((other) => other.event_id === delivery.event_id) === delivery;
        if (delivery.status !== 'pending' && isLatest) {
          const again = el(
            'button',
            { type: 'button', class: 'secondary' },
            t('console.webhooks.sendAgain'),
            el('span', { class: 'visually-hidden' }, ` ${delivery.type} ${delivery.event_id}`),
          );
          again.addEventListener('click', () => act(deliveriesPanel, () => redeliver(endpoint, delivery)));
          state.append(' ', again);
        }
        return el(
          'tr',
          {},
          el('td', {}, delivery.type),
          el('td', {}, delivery.attempted_at ? timeAgo(new Date(delivery.attempted_at)) : t('console.common.none')),
          el('td', { class: 'number' }, count(delivery.attempt)),
          state,
        );
      }),
    );
    byId('webhook-no-deliveries').hidden = deliveries.length > 0;
    deliveriesPanel.hidden = false;
    byId('webhook-deliveries-title').focus();
  }

  async function redeliver(endpoint: Endpoint, delivery: Delivery): Promise<void> {
    await api.call('POST', `webhooks/${endpoint.id}/deliveries/${delivery.event_id}/redeliver`);
    await showDeliveries(endpoint);
    say(t('console.webhooks.sentAgain', { type: delivery.type }), deliveriesPanel);
  }

  function askRemove(endpoint: Endpoint, from: HTMLElement): void {
    removing = endpoint;
    opener = from;
    byId('webhook-remove-question').textContent = t('console.webhooks.removeQuestion', { url: endpoint.url });
    removeBox.hidden = false;
    byId('webhook-remove-yes').focus();
  }

  function closeRemove(): void {
    removeBox.hidden = true;
    opener?.focus();
    opener = undefined;
  }

  async function remove(): Promise<void> {
    const endpoint = removing;
    if (!endpoint) return;
    await api.call('DELETE', `webhooks/${endpoint.id}`);
    removeBox.hidden = true;
    opener = undefined;
    if (shown?.id === endpoint.id) deliveriesPanel.hidden = true;
    await show();
    say(t('console.webhooks.removed', { url: endpoint.url }), list);
    byId('webhooks-title').focus();
  }

  async function add(): Promise<void> {
    const events = byId<HTMLInputElement>('webhook-events')
      .value.split(/[\s,]+/)
      .filter(Boolean);
    const created = await api.call<Endpoint>('POST', 'webhooks', {
      url: byId<HTMLInputElement>('webhook-url').value.trim(),
      ...(events.length > 0 && { events }),
    });
    form.reset();
    await show();
    say(t('console.webhooks.added', { url: created.url }), list);
    byId('webhook-secret-for').textContent = t('console.webhooks.secretFor', { url: created.url });
    byId<HTMLInputElement>('webhook-secret').value = created.secret ?? '';
    byId('webhook-secret-box').hidden = false;
    byId('webhook-secret').focus();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearNotices();
    byId('webhook-secret-box').hidden = true;
    act(form, add);
  });
  copyOnClick('webhook-secret-copy', 'webhook-secret', 'secret');
  byId('webhook-remove-yes').addEventListener('click', () => act(removeBox, remove));
  byId('webhook-remove-no').addEventListener('click', closeRemove);
  closeOnEscape(removeBox, closeRemove);

  return { show };
}
