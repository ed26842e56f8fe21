// A single-page app signing in with this service through oidc-client-ts, configured with the
// issuer, its client_id, its redirect URI, the response type and the scope, nothing else: PKCE (S256)
// is the library's default. serve.ts bundles this file and puts the settings in the page.
import { type User, UserManager } from 'oidc-client-ts';

const settings = JSON.parse(document.getElementById('settings')?.textContent ?? '{}') as {
  issuer: string;
  clientId: string;
};

const userManager = new UserManager({
  authority: settings.issuer,
  client_id: settings.clientId,
  redirect_uri: `${location.origin}/callback`,
  // Signing in in a popup window comes back here, in that window, which hands the answer to this page.
  popup_redirect_uri: `${location.origin}/popup-callback`,
  response_type: 'code',
  scope: 'openid profile',
});

function element(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from index.html`);
  return found;
}

/** Back from the service: the code (after signing in) or the state (after signing out) is in the URL. */
async function finishRedirect(): Promise<void> {
  if (location.pathname === '/popup-callback') {
    // In the popup: the library passes the code to the page that opened it, which closes this window.
    await userManager.signinPopupCallback();
  } else if (location.pathname === '/callback') {
    // Checks the state, exchanges the code with the PKCE verifier, and keeps the tokens in sessionStorage.
    await userManager.signinRedirectCallback();
    history.replaceState(null, '', '/');
  } else if (new URLSearchParams(location.search).has('state')) {
    await userManager.signoutRedirectCallback();
    history.replaceState(null, '', '/');
  }
}

/** The access token at work: the service's userinfo endpoint, called cross-origin (its CORS allows our origin). */
async function fetchUserInfo(user: User): Promise<{ sub: string; preferred_username?: string }> {
  const endpoint = await userManager.metadataService.getUserInfoEndpoint();
  const response = await fetch(endpoint, { headers: { authorization: `Bearer ${user.access_token}` } });
  if (!response.ok) throw new Error(`the userinfo endpoint answered ${response.status}`);
  return response.json();
}

async function show(): Promise<void> {
  const user = await userManager.getUser();
  element('signed-out').hidden = user !== null;
  element('signed-in').hidden = user === null;
  if (!user) return;
  // The ID token says who and how; profile claims such as the username come from userinfo
  // (OpenID Connect Core §5.4), unless the provider chose to put them in the ID token too.
  const info = await fetchUserInfo(user);
  element('who').textContent = `Signed in as ${info.preferred_username ?? user.profile.preferred_username ?? info.sub}`;
  element('userinfo').textContent =
    `The userinfo endpoint, called with the access token, answered ${JSON.stringify(info)}`;
}

element('sign-in').addEventListener('click', () => {
  userManager.signinRedirect().catch(report);
});
element('sign-in-popup').addEventListener('click', () => {
  // The same sign-in in a window of its own: this page stays, and is told the outcome.
  userManager.signinPopup().then(show).catch(report);
});
element('sign-out').addEventListener('click', () => {
  // RP-Initiated Logout: the library sends the ID token as id_token_hint, and forgets the user first.
  userManager.signoutRedirect({ post_logout_redirect_uri: `${location.origin}/` }).catch(report);
});

function report(error: unknown): void {
  element('error').textContent = `Something went wrong: ${error instanceof Error ? error.message : String(error)}`;
}

finishRedirect().then(show).catch(report);
