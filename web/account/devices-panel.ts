// The browsers that skip the second step (CONTRACT §19, "Remember this device"): where and when each
// was remembered and last used; forgetting one makes it ask again. Changing the second factors
// forgets them all, on the service's side.
import { button, byId, el } from '../shared/dom.js';
import { say } from '../shared/notices.js';
import type { Api } from './api.js';
import type { Step } from './messages.js';

type Act = (step: Step, container: HTMLElement | undefined, action: () => Promise<void>) => Promise<void>;

export interface RememberedDevice {
  id: string;
  browser: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
}

export function createDevicesPanel(api: Api, act: Act, reload: () => Promise<unknown>) {
  const panel = byId('devices-panel');
  const title = byId('devices-title');
  const list = byId('device-list');
  const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
  const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

  /** Shown only while there is a device to forget: most apps never offer to remember one. */
  function render(devices: RememberedDevice[]) {
    panel.hidden = devices.length === 0;
    list.replaceChildren(...devices.map(renderDevice));
  }

  function renderDevice(device: RememberedDevice): HTMLLIElement {
    const forget = button('Forget', ` “${device.browser}”`);
    forget.addEventListener('click', () =>
      act('other', item, async () => {
        await api.call('DELETE', `mfa/devices/${encodeURIComponent(device.id)}/`);
        await reload();
        say(`${device.browser} forgotten: it asks for the second step again.`, title);
        title.focus();
      }),
    );
    const item = el(
      'li',
      {},
      el('div', { class: 'factor-head' }, el('span', { class: 'factor-name' }, device.browser)),
      el(
        'p',
        { class: 'factor-dates' },
        `Remembered ${dateFormat.format(new Date(device.created_at))} · Last used ${dateTimeFormat.format(new Date(device.last_used_at))} · Until ${dateFormat.format(new Date(device.expires_at))}`,
      ),
      el('p', { class: 'notice', hidden: '' }),
      el('div', { class: 'actions' }, forget),
    );
    return item;
  }

  return { render };
}
