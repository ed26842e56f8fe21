// The admin API as the console calls it, with the operator's access token (CONTRACT §21).
import { ApiError, fetchJson } from '../shared/api-error.js';
import { issuer } from './auth.js';

/** What a refusal of the admin API asks of the operator, or undefined for an ordinary error. */
export type Refusal = 'signed-out' | 'not-operator' | 'second-factor' | 'fresh';

/** `acr`: what the operator's sign-in reached, from its ID token. */
export function refusalOf(error: unknown, acr: unknown): Refusal | undefined {
  if (!(error instanceof ApiError)) return undefined;
  if (error.code === 'invalid_token') return 'signed-out';
  if (error.code === 'not_an_operator') return 'not-operator';
  if (error.code !== 'insufficient_user_authentication') return undefined;
  // RFC 9470's challenge names aal2 and a max_age either way: a sign-in without a second factor
  // lacks the one, a sign-in with one is too old for a change.
  return acr === 'aal1' ? 'second-factor' : 'fresh';
}

export function createConsoleApi(accessToken: string) {
  /** `method` on <issuer>/admin/<path>, a JSON body when given; the parsed answer. */
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await fetchJson(`${issuer}/admin/${path}`, {
      method,
      credentials: 'omit',
      headers: {
        authorization: `Bearer ${accessToken}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })) as T;
  }
  return { call };
}

export type ConsoleApi = ReturnType<typeof createConsoleApi>;

export { ApiError };
