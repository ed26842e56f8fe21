// The page a reset link opens (CONTRACT §20): <base>/account/reset/?token=…. It sets the new
// password and signs no one in: the person then signs in as usual, second step included.
import { byId, whileBusy } from '../../shared/dom.js';
import { t, useLanguage } from '../../shared/i18n.js';
import { describeError } from '../../shared/messages.js';
import { warn } from '../../shared/notices.js';
import { setPasswordWithLink } from '../../shared/password-reset.js';

const base = new URL('../../', location.href);
const token = new URLSearchParams(location.search).get('token') ?? '';
// The token leaves the address bar (and so the history and any shared screenshot) once read.
if (token) history.replaceState(null, '', location.pathname);

const form = byId<HTMLFormElement>('reset-form');
const input = byId<HTMLInputElement>('new-password');

function show(id: 'reset' | 'done' | 'no-link') {
  for (const section of ['reset', 'done', 'no-link']) byId(section).hidden = section !== id;
  byId(`${id}-title`).focus();
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  if (input.value.length < 8) {
    warn(t('reset.tooShort'), input);
    return;
  }
  void whileBusy(form, async () => {
    try {
      await setPasswordWithLink(base, token, input.value);
      input.value = '';
      show('done');
    } catch (error) {
      warn(describeError(error, 'other'), input);
      input.select();
    }
  });
});

// The browser's languages: the link carries none, and no one is signed in.
void useLanguage(navigator.languages).then(() => {
  if (token) {
    show('reset');
    input.focus();
  } else {
    show('no-link');
  }
});
