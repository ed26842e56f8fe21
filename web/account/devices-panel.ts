// The browsers that skip the second step (CONTRACT §19, "Remember this device"): where and when each
// was remembered and last used; forgetting one makes it ask again. Changing the second factors
// forgets them all, on the service's side.
import { button, byId, el } from '../shared/dom.js';
import { dateTime, onLanguageChange, t } from '../shared/i18n.js';
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
  let shown: RememberedDevice[] = [];

  /** Shown only while there is a device to forget: most apps never offer to remember one. */
  function render(devices: RememberedDevice[]) {
    shown = devices;
    panel.hidden = devices.length === 0;
    list.replaceChildren(...devices.map(renderDevice));
  }
  onLanguageChange(() => render(shown));

  function renderDevice(device: RememberedDevice): HTMLLIElement {
    const forget = button(t('account.devices.forget'), ` ${t('account.factors.quoted', { name: device.browser })}`);
    forget.addEventListener('click', () =>
      act('other', item, async () => {
        await api.call('DELETE', `mfa/devices/${encodeURIComponent(device.id)}/`);
        await reload();
        say(t('account.devices.forgotten', { browser: device.browser }), title);
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
        t('account.devices.dates', {
          remembered: dateTime(new Date(device.created_at), 'date'),
          used: dateTime(new Date(device.last_used_at)),
          until: dateTime(new Date(device.expires_at), 'date'),
        }),
      ),
      el('p', { class: 'notice', hidden: '' }),
      el('div', { class: 'actions' }, forget),
    );
    return item;
  }

  return { render };
}
