// The account page (CONTRACT §17): sign in, then manage second factors and backup codes. Served by
// the service at <base>/account/; everything it calls is on the same origin, under <base>/.
import { type PublicKeyCredentialCreationOptionsJSON, startRegistration } from '@simplewebauthn/browser';
import { fetchJson } from '../shared/api-error.js';
import { byId, setTitle, whileBusy } from '../shared/dom.js';
import { addEnglish, t, useLanguage } from '../shared/i18n.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { Method } from '../shared/sign-in.js';
import { createAccountView } from './account-view.js';
import { createApi, type Tokens } from './api.js';
import en from './locales/en.json' with { type: 'json' };
import { describeError } from './messages.js';
import { createAccountSignIn } from './sign-in.js';

addEnglish(en);

const base = new URL('../', location.href);
const who = byId('who');
const whoName = byId('who-name');
const signOut = byId<HTMLButtonElement>('sign-out');
let username = '';

const api = createApi(base, {
  stepUp: (challenge) => {
    // Hidden, not cleared: the change waiting for the re-authentication goes on where it was.
    byId('account').hidden = true;
    return signIn.stepUp(username, challenge, account.phoneEnding);
  },
  sessionEnded: () => {
    void leaveAccount().then(() => warn(t('account.session.ended'), byId('sign-in')));
  },
});

const account = createAccountView(api, () => username);
function signedIn(name: string, method?: Method) {
  username = name;
  whoName.textContent = name;
  who.hidden = false;
  signOut.hidden = false;
  void account.show({ afterBackupCode: method === 'backup' });
}

const signIn = createAccountSignIn(api, {
  signedIn,
  backToAccount() {
    byId('account').hidden = false;
    setTitle(() => t('account.documentTitle.account'));
  },
});

/** Back to the sign-in, in the browser's languages again (the stored one was the account's). */
async function leaveAccount(): Promise<void> {
  username = '';
  who.hidden = true;
  signOut.hidden = true;
  account.hide();
  await account.forgetLanguage();
  signIn.start();
}

signOut.addEventListener('click', () => {
  const refreshToken = api.forgetTokens();
  const left = leaveAccount();
  if (!refreshToken) return;
  signOut.disabled = true;
  Promise.all([api.revoke(refreshToken), api.endBrowserSession(), left])
    .then(() => say(t('account.session.signedOut'), byId('sign-in')))
    .catch(async () => {
      await left;
      warn(t('account.session.notTold'), byId('sign-in'));
    })
    .finally(() => {
      signOut.disabled = false;
    });
});

/**
 * CONTRACT §19: an invite link (`#invite=<token>`, a fragment the browser never sends) makes the
 * account's first passkey and signs in with it. The token leaves the address bar at once.
 */
function openInvite(invite: string) {
  history.replaceState(null, '', location.pathname + location.search);
  const section = byId('invite');
  const form = byId<HTMLFormElement>('invite-form');
  section.hidden = false;
  setTitle(() => t('account.documentTitle.invite'));
  byId('invite-title').focus();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = byId<HTMLInputElement>('invite-name').value.trim() || t('account.invite.defaultName');
    void whileBusy(form, async () => {
      try {
        const { options } = await api.send<{ options: PublicKeyCredentialCreationOptionsJSON }>(
          'mfa/invite/passkey/options/',
          { invite, name },
        );
        const credential = await startRegistration({ optionsJSON: options });
        const accepted = await api.send<Tokens & { username: string }>('mfa/invite/passkey/', {
          invite,
          credential,
          name,
        });
        api.useTokens(accepted);
        section.hidden = true;
        clearNotices();
        say(t('account.invite.created', { name }));
        signedIn(accepted.username);
      } catch (error) {
        warn(describeError(error, 'passkey'), form);
      }
    });
  });
}

/** Issue 31: the header names the service (SERVICE_NAME), as the hosted sign-in does; left out if it cannot be had. */
async function showServiceName() {
  try {
    const { service_name } = (await fetchJson(new URL('mfa/service/', base), { credentials: 'omit' })) as {
      service_name: string;
    };
    const shown = byId('service-name');
    shown.textContent = service_name;
    shown.hidden = !service_name;
  } catch {
    // Unreachable for now: the header says "Account security" alone.
  }
}

void showServiceName();
// The browser's languages until someone signs in (the sign-in screen appears in them).
await useLanguage();
const invite = /^#invite=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
if (invite) openInvite(invite);
else signIn.start();
