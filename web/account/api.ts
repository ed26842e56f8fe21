// The service's API as the page uses it. The tokens live in this module's memory only (no storage,
// no cookies): closing or reloading the tab ends the page's hold on the login.
import { ApiError, fetchJson } from '../shared/api-error.js';

/** The person gave up a step the call needed (the re-authentication); nothing was changed. */
export class Cancelled extends Error {}

/** The login ended (revoked, expired, or replaced): the person must sign in again. */
export class SessionEnded extends Error {}

export interface Tokens {
  access_token: string;
  refresh_token: string;
}

export type FactorType = 'sms' | 'totp' | 'webauthn' | 'email';

export interface MfaRequired {
  mfa_required: true;
  mfa_type: FactorType;
  mfa_types?: FactorType[];
  webauthn?: Record<string, unknown>;
}

export interface Factor {
  id: string;
  type: FactorType;
  name: string;
  is_default: boolean;
  created_at: string;
  last_used_at: string | null;
  phone_number?: string;
  /** Passkeys: the authenticator's name when known, synced or not, able to sign in alone. */
  authenticator?: string | null;
  synced?: boolean;
  can_sign_in_alone?: boolean;
}

/** What RFC 9470's challenge asks of a new login: a second factor (acr_values), or only a fresh one. */
export interface StepUpChallenge {
  acrValues?: string;
  maxAge: string;
}

export interface ApiHooks {
  /** Re-authenticates (RFC 9470 step-up): true with new tokens installed, false when the person cancels. */
  stepUp(challenge: StepUpChallenge): Promise<boolean>;
  /** The login cannot go on (the refresh token was refused too). */
  sessionEnded(): void;
}

const TOKEN_PATH = 'mfa/oauth2/token/';
const REVOCATION_PATH = 'mfa/oauth2/revoke/';
const END_SESSION_PATH = 'mfa/oauth2/logout/';
const PASSKEY_OPTIONS_PATH = 'mfa/webauthn/sign-in/';
const USERINFO_PATH = 'mfa/oauth2/userinfo/';
/** CONTRACT §19: the token endpoint's grant for a sign-in with a passkey alone. */
export const PASSKEY_GRANT = 'urn:mfa-service:grant-type:passkey';

/** The page is served at <base>/account/: the API is at <base>/mfa/…, on the same origin. */
export function createApi(base: URL, hooks: ApiHooks) {
  let tokens: Tokens | undefined;
  /** One refresh at a time: two would spend one refresh token twice, which revokes the login. */
  let refreshing: Promise<void> | undefined;

  function send(path: string, init: RequestInit): Promise<unknown> {
    // No cookie goes with the API's calls; only the sign-out's, which ends the browser's session.
    return fetchJson(new URL(path, base), { credentials: 'omit', ...init });
  }

  /** POST the token endpoint (JSON body): tokens, or the second step it asks for. */
  async function tokenRequest(fields: Record<string, unknown>): Promise<Tokens | MfaRequired> {
    return (await send(TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(fields),
    })) as Tokens | MfaRequired;
  }

  async function refresh(): Promise<void> {
    const current = tokens;
    if (!current) throw new SessionEnded();
    let answer: Tokens | MfaRequired | undefined;
    try {
      answer = await tokenRequest({ grant_type: 'refresh_token', refresh_token: current.refresh_token });
    } catch (error) {
      // Only the token endpoint's verdict on the refresh token ends the login. An outage (no network,
      // 5xx, 429) says nothing about it: the tokens are kept for the next try, and the error is shown.
      const isRefused = error instanceof ApiError && (error.status === 401 || error.code === 'invalid_grant');
      if (!isRefused) throw error;
    }
    if (answer && isTokens(answer)) {
      if (tokens === current) tokens = answer;
      return;
    }
    if (tokens === current) tokens = undefined;
    hooks.sessionEnded();
    throw new SessionEnded();
  }

  /**
   * An authenticated call. An expired access token is refreshed once; RFC 9470's
   * `insufficient_user_authentication` sends the person through the step-up, then the call is
   * made again (unless `stepUp` is false: then it is thrown like any other error).
   */
  async function call<T>(method: string, path: string, options: { body?: unknown; stepUp?: boolean } = {}): Promise<T> {
    let refreshed = false;
    let steppedUp = false;
    for (;;) {
      const used = tokens;
      if (!used) throw new SessionEnded();
      try {
        return (await send(path, {
          method,
          headers: {
            authorization: `Bearer ${used.access_token}`,
            ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
        })) as T;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.code === 'invalid_token' && !refreshed) {
          refreshed = true;
          // Another call may have refreshed meanwhile: then only retry with its tokens.
          if (tokens === used) {
            refreshing ??= refresh().finally(() => {
              refreshing = undefined;
            });
            await refreshing;
          }
          continue;
        }
        if (error.code === 'invalid_token') {
          tokens = undefined;
          hooks.sessionEnded();
          throw new SessionEnded();
        }
        if (error.code === 'insufficient_user_authentication' && options.stepUp !== false && !steppedUp) {
          steppedUp = true;
          if (!(await hooks.stepUp(stepUpChallengeOf(error.headers)))) throw new Cancelled();
          continue;
        }
        throw error;
      }
    }
  }

  /** RFC 7009: revokes the login's refresh token (and so the login); the public client needs no credentials. */
  async function revoke(refreshToken: string): Promise<void> {
    await send(REVOCATION_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }).toString(),
    });
  }

  /**
   * Ends this browser's sign-in session at the service (CONTRACT §18: the account page's sign-out
   * ends it too), and with it the apps' logins that came through it. JSON from our own origin, which
   * no other site can send.
   */
  async function endBrowserSession(): Promise<void> {
    await send(END_SESSION_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      credentials: 'same-origin',
    });
  }

  /** Options for signing in with a passkey alone (CONTRACT §19); anyone may ask. */
  async function passkeyOptions(): Promise<Record<string, unknown>> {
    return ((await send(PASSKEY_OPTIONS_PATH, { method: 'POST' })) as { options: Record<string, unknown> }).options;
  }

  /** The username of the login `access` stands for (userinfo: the token must have been granted openid). */
  async function usernameOf(access: string): Promise<string> {
    const info = (await send(USERINFO_PATH, { headers: { authorization: `Bearer ${access}` } })) as {
      preferred_username: string;
    };
    return info.preferred_username;
  }

  /** A POST with a JSON body and no token (the invite's calls). */
  async function postJson<T>(path: string, body: unknown): Promise<T> {
    return (await send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })) as T;
  }

  return {
    tokenRequest,
    send: postJson,
    call,
    revoke,
    endBrowserSession,
    passkeyOptions,
    usernameOf,
    get isSignedIn() {
      return tokens !== undefined;
    },
    /** Installs the tokens of a new login; answers the refresh token of the login it replaces. */
    useTokens(next: Tokens): string | undefined {
      const previous = tokens?.refresh_token;
      tokens = { access_token: next.access_token, refresh_token: next.refresh_token };
      return previous;
    },
    /** Forgets the tokens; answers the refresh token, so the caller can revoke it. */
    forgetTokens(): string | undefined {
      const previous = tokens?.refresh_token;
      tokens = undefined;
      return previous;
    },
  };
}

export type Api = ReturnType<typeof createApi>;

/**
 * `WWW-Authenticate: Bearer error="insufficient_user_authentication", acr_values="aal2", max_age=600`;
 * without acr_values (turning MFA on with an old login) only a fresh password login is asked.
 */
function stepUpChallengeOf(headers: Headers | undefined): StepUpChallenge {
  const header = headers?.get('www-authenticate') ?? '';
  const acrValues = /acr_values="([^"]*)"/.exec(header)?.[1] || undefined;
  const maxAge = /max_age="?(\d+)"?/.exec(header)?.[1] ?? '600';
  return { acrValues, maxAge };
}

export function isTokens(answer: Tokens | MfaRequired): answer is Tokens {
  return 'access_token' in answer;
}
