// The account page (CONTRACT §17): sign in, then manage second factors and backup codes. Served by
// the service at <base>/account/; everything it calls is on the same origin, under <base>/.
import { type PublicKeyCredentialCreationOptionsJSON, startRegistration } from '@simplewebauthn/browser';
import { byId, whileBusy } from '../shared/dom.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import type { Method } from '../shared/sign-in.js';
import { createAccountView } from './account-view.js';
import { createApi, type Tokens } from './api.js';
import { describeError } from './messages.js';
import { createAccountSignIn } from './sign-in.js';

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
    leaveAccount();
    warn('Your session has ended. Sign in again.', byId('sign-in'));
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
    document.title = 'Sign-in security · Account security';
  },
});

function leaveAccount() {
  username = '';
  who.hidden = true;
  signOut.hidden = true;
  account.hide();
  signIn.start();
}

signOut.addEventListener('click', () => {
  const refreshToken = api.forgetTokens();
  leaveAccount();
  if (!refreshToken) return;
  signOut.disabled = true;
  Promise.all([api.revoke(refreshToken), api.endBrowserSession()])
    .then(() => say('You are signed out.', byId('sign-in')))
    .catch(() =>
      warn(
        'You are signed out of this page, but the service could not be told; sign out again later.',
        byId('sign-in'),
      ),
    )
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
  document.title = 'Create your passkey · Account security';
  byId('invite-title').focus();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = byId<HTMLInputElement>('invite-name').value.trim() || 'Passkey';
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
        say(`Passkey “${name}” created: you are signed in with it.`);
        signedIn(accepted.username);
      } catch (error) {
        warn(describeError(error, 'passkey'), form);
      }
    });
  });
}

const invite = /^#invite=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
if (invite) openInvite(invite);
else signIn.start();
