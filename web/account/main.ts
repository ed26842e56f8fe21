// The account page (CONTRACT §17): sign in, then manage second factors and backup codes. Served by
// the service at <base>/account/; everything it calls is on the same origin, under <base>/.
import { byId } from '../shared/dom.js';
import { say, warn } from '../shared/notices.js';
import { createAccountView } from './account-view.js';
import { createApi } from './api.js';
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
    return signIn.stepUp(username, challenge);
  },
  sessionEnded: () => {
    leaveAccount();
    warn('Your session has ended. Sign in again.', byId('sign-in'));
  },
});

const account = createAccountView(api, () => username);

const signIn = createAccountSignIn(api, {
  signedIn(name) {
    username = name;
    whoName.textContent = name;
    who.hidden = false;
    signOut.hidden = false;
    void account.show();
  },
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

signIn.start();
