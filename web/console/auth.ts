// The console signs operators in as any single-page app would (CONTRACT §18, §21): oidc-client-ts,
// the authorization code flow with PKCE, through the hosted sign-in. The console is the built-in
// public client whose id is the console's own address (src/oauth/console-client.ts), so nothing is
// configured here. Tokens stay in memory: a reload signs in again through the browser's session.
import { ErrorResponse, InMemoryWebStorage, type User, UserManager, WebStorageStateStore } from 'oidc-client-ts';
import { findLanguage } from '../shared/i18n.js';

/** Where to go back to after a sign-in: the view, and a change that waited for a fresh sign-in. */
export interface Resume {
  view: string;
  userId?: string;
  action?: string;
}

export type Landing =
  | { kind: 'signed-in'; user: User; resume?: Resume }
  | { kind: 'refused'; error: string; description: string }
  | { kind: 'signed-out' }
  | { kind: 'redirecting' };

const here = new URL('./', location.href);
/** The console's own client: its address (src/oauth/console-client.ts). */
export const consoleClientId = here.href;
/** The console is served at <issuer>/admin/console/. */
export const issuer = new URL('../../', here).href.replace(/\/$/, '');

const manager = new UserManager({
  authority: issuer,
  client_id: consoleClientId,
  redirect_uri: here.href,
  post_logout_redirect_uri: here.href,
  response_type: 'code',
  scope: 'openid',
  // The username comes from the userinfo endpoint (the ID token carries no profile claims).
  loadUserInfo: true,
  // Keeps acr in the profile: whether the sign-in had a second factor decides what a refusal asks.
  filterProtocolClaims: false,
  automaticSilentRenew: false,
  monitorSession: false,
  userStore: new WebStorageStateStore({ store: new InMemoryWebStorage() }),
  // Only the state and the PKCE verifier of a sign-in in progress, which must outlive the redirect
  // to the hosted sign-in; the library removes them when the code comes back.
  stateStore: new WebStorageStateStore({ store: sessionStorage }),
});

/** The page just opened: finishes a sign-in or sign-out coming back, or starts a sign-in. */
export async function land(): Promise<Landing> {
  const params = new URLSearchParams(location.search);
  const returned = params.has('code') || params.has('error');
  const signedOut = !returned && params.has('state');
  if (returned || signedOut) history.replaceState(null, '', here.pathname + location.hash);
  if (signedOut) {
    await manager.signoutRedirectCallback(`${here.href}?${params}`).catch(() => undefined);
    return { kind: 'signed-out' };
  }
  if (returned) {
    try {
      const user = await manager.signinRedirectCallback(`${here.href}?${params}`);
      return { kind: 'signed-in', user, resume: user.state as Resume | undefined };
    } catch (error) {
      if (error instanceof ErrorResponse) {
        return { kind: 'refused', error: error.error ?? 'error', description: error.error_description ?? '' };
      }
      // A code of an earlier visit (back button, a second tab): start again.
    }
  }
  await signIn({ view: location.hash });
  return { kind: 'redirecting' };
}

/**
 * To the hosted sign-in and back to `resume`. `fresh`: a new sign-in with a second factor even
 * when the browser's session could answer (a change needs one within STEP_UP_MAX_AGE); `strong`:
 * a second factor (the hosted sign-in offers to add one to an account that has none).
 */
export function signIn(resume: Resume, how: { fresh?: boolean; strong?: boolean } = {}): Promise<void> {
  const browserLanguage = findLanguage(navigator.languages);
  return manager.signinRedirect({
    state: resume,
    // The hosted sign-in in the console's language when the browser names a shipped one (CONTRACT
    // §22); otherwise none, so that the operator's stored language comes before English.
    ...(browserLanguage && { ui_locales: browserLanguage }),
    ...(how.fresh && { prompt: 'login' }),
    ...((how.fresh || how.strong) && { acr_values: 'aal2' }),
  });
}

/** RP-initiated logout: ends the browser's session at the service, then comes back signed out. */
export function signOut(): Promise<void> {
  // State data, so that the library sends a state: it is how the page knows it came back signed out.
  return manager.signoutRedirect({ state: { view: location.hash } });
}
