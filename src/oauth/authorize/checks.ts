// The authorization endpoint's rules (CONTRACT §18), one small check each, run in order. Each
// reads the request's parameters, throws an AuthorizeError, or adds what it learnt to the draft.
// Which errors may go back to the app is decided in one place (checkAuthorizationRequest): only
// once checkRedirectUri has passed; before, the browser is shown a page and never redirected.
import { ACR_VALUES, type Acr } from '../../logins/step-up.js';
import type { OAuthClient } from '../../store/clients.js';
import { isLoopbackHost } from '../client-metadata.js';

/** A checked authorization request (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2.1, RFC 7636). */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  state?: string;
  /** Space-separated, each within the client's allowed scopes. */
  scope: string;
  /** RFC 7636 S256 challenge. */
  codeChallenge: string;
  nonce?: string;
  prompt?: 'none' | 'login';
  maxAgeSeconds?: number;
  /** The known acr values asked for, in order of preference (RFC 9470). */
  acrValues: Acr[];
  loginHint?: string;
  uiLocales?: string;
}

/** The parameters as received: a parameter sent twice arrives as an array. */
export type AuthorizationParams = Readonly<Record<string, string | string[] | undefined>>;

/** A refusal: an RFC 6749 §4.1.2.1 error code and what to do instead. */
export class AuthorizeError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(`${error}: ${description}`);
  }
}

interface Draft {
  params: AuthorizationParams;
  client?: OAuthClient;
  request: Partial<AuthorizationRequest>;
}

type AuthorizeCheck = (draft: Draft, findClient: (id: string) => Promise<OAuthClient | undefined>) => unknown;

const AUTHORIZATION_CHECKS: readonly AuthorizeCheck[] = [
  checkClient, //            unknown client: a page, never a redirect
  checkRedirectUri, //       exact match (loopback: any port); unregistered: a page
  checkResponseType, //      "code" in the query, only; from here on errors go back with state and iss
  checkUnsupportedRequests, // no request objects, no dynamic registration
  checkPkce, //              S256 and a challenge, for every client
  checkScope, //             within the client's allowed_scopes
  checkPromptAndMaxAge,
  checkAcrValues,
  checkHints, //             nonce, login_hint, ui_locales: bounded
];

/** What the runner tells the endpoint when a check refuses. */
export type AuthorizeRefusal =
  | { shownTo: 'browser'; error: AuthorizeError }
  | { shownTo: 'app'; error: AuthorizeError; redirectUri: string; state?: string };

/** Runs every check in order: the request, or where its refusal goes. */
export async function checkAuthorizationRequest(
  params: AuthorizationParams,
  findClient: (id: string) => Promise<OAuthClient | undefined>,
): Promise<{ request: AuthorizationRequest; client: OAuthClient } | { refusal: AuthorizeRefusal }> {
  const draft: Draft = { params, request: { acrValues: [] } };
  for (const check of AUTHORIZATION_CHECKS) {
    try {
      await check(draft, findClient);
    } catch (error) {
      if (!(error instanceof AuthorizeError)) throw error;
      const { redirectUri, state } = draft.request;
      if (redirectUri === undefined) return { refusal: { shownTo: 'browser', error } };
      return { refusal: { shownTo: 'app', error, redirectUri, state } };
    }
  }
  return { request: draft.request as AuthorizationRequest, client: draft.client as OAuthClient };
}

/** The parameter's one value; RFC 6749 §3.1: a parameter may not be sent twice. */
function single(draft: Draft, name: string, maxLength = 2000): string | undefined {
  const value = draft.params[name];
  if (Array.isArray(value)) throw new AuthorizeError('invalid_request', `${name} is given more than once`);
  if (value === undefined || value === '') return undefined;
  if (value.length > maxLength)
    throw new AuthorizeError('invalid_request', `${name} is longer than ${maxLength} characters`);
  return value;
}

async function checkClient(draft: Draft, findClient: (id: string) => Promise<OAuthClient | undefined>) {
  const clientId = single(draft, 'client_id', 200);
  if (clientId === undefined) throw new AuthorizeError('invalid_request', 'client_id is missing');
  const client = await findClient(clientId);
  if (!client) throw new AuthorizeError('invalid_client', 'no client is registered with this client_id');
  if (client.redirectUris.length === 0) {
    throw new AuthorizeError(
      'unauthorized_client',
      'this client has no redirect_uris: it is not registered for sign-in',
    );
  }
  draft.client = client;
  draft.request.clientId = client.id;
}

function checkRedirectUri(draft: Draft) {
  const registered = draft.client?.redirectUris ?? [];
  const given = single(draft, 'redirect_uri');
  // OAuth 2.1 §2.3.1: a client with a single redirect URI may leave it out.
  const redirectUri = given ?? (registered.length === 1 ? registered[0] : undefined);
  if (redirectUri === undefined) {
    throw new AuthorizeError('invalid_request', 'redirect_uri is missing, and the client has several');
  }
  if (!registered.some((candidate) => redirectUriMatches(candidate, redirectUri))) {
    throw new AuthorizeError('invalid_request', 'redirect_uri is not one registered for this client');
  }
  // Read before recording the URI, so that a duplicated state is shown to the browser, not echoed.
  const state = single(draft, 'state', 1000);
  draft.request.redirectUri = redirectUri;
  draft.request.state = state;
}

/**
 * Exact string match, except that a loopback http redirect matches on any port (RFC 8252 §7.3:
 * native apps listen on a port the system gives them).
 */
export function redirectUriMatches(registered: string, given: string): boolean {
  if (registered === given) return true;
  if (!URL.canParse(registered) || !URL.canParse(given)) return false;
  const [expected, actual] = [new URL(registered), new URL(given)];
  if (expected.protocol !== 'http:' || !isLoopbackHost(expected.hostname)) return false;
  // The registered URI without a port against the given one without its port, spelt the same.
  const withoutPort = (uri: string, url: URL) =>
    url.port ? uri.replace(`${url.hostname}:${url.port}`, url.hostname) : uri;
  return withoutPort(registered, expected) === withoutPort(given, actual) && actual.hostname === expected.hostname;
}

function checkResponseType(draft: Draft) {
  const responseType = single(draft, 'response_type', 100);
  if (responseType !== 'code') {
    throw new AuthorizeError(
      'unsupported_response_type',
      `response_type must be code (the authorization code flow), got ${responseType ?? 'none'}`,
    );
  }
  const responseMode = single(draft, 'response_mode', 100);
  if (responseMode !== undefined && responseMode !== 'query') {
    throw new AuthorizeError('invalid_request', `response_mode must be query, got ${responseMode}`);
  }
}

function checkUnsupportedRequests(draft: Draft) {
  if (draft.params.request !== undefined) {
    throw new AuthorizeError('request_not_supported', 'request objects are not supported: send the parameters as such');
  }
  if (draft.params.request_uri !== undefined) {
    throw new AuthorizeError('request_uri_not_supported', 'request_uri is not supported: send the parameters as such');
  }
  if (draft.params.registration !== undefined) {
    throw new AuthorizeError(
      'registration_not_supported',
      'clients are registered by the operator, not in the request',
    );
  }
}

// RFC 7636 §4.2: BASE64URL(SHA-256(verifier)) is 43 characters; §4.1 allows the unreserved set.
const CODE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

function checkPkce(draft: Draft) {
  const method = single(draft, 'code_challenge_method', 20);
  const challenge = single(draft, 'code_challenge', 200);
  if (challenge === undefined) {
    throw new AuthorizeError(
      'invalid_request',
      'code_challenge is missing: PKCE (RFC 7636) with S256 is required of every client',
    );
  }
  if (method !== 'S256') {
    throw new AuthorizeError(
      'invalid_request',
      `code_challenge_method must be S256 (plain is refused), got ${method ?? 'none, which means plain'}`,
    );
  }
  if (!CODE_CHALLENGE.test(challenge)) {
    throw new AuthorizeError(
      'invalid_request',
      'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)',
    );
  }
  draft.request.codeChallenge = challenge;
}

// RFC 6749 §3.3 scope-token.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

function checkScope(draft: Draft) {
  const scopes = (single(draft, 'scope', 1000) ?? '').split(' ').filter(Boolean);
  const allowed = draft.client?.allowedScopes ?? [];
  for (const scope of scopes) {
    if (!SCOPE_TOKEN.test(scope)) throw new AuthorizeError('invalid_scope', `"${scope}" is not a scope token`);
    if (!allowed.includes(scope)) {
      throw new AuthorizeError(
        'invalid_scope',
        `this client may not be granted ${scope}; it may ask for: ${allowed.join(' ')}`,
      );
    }
  }
  draft.request.scope = [...new Set(scopes)].join(' ');
}

function checkPromptAndMaxAge(draft: Draft) {
  const prompts = (single(draft, 'prompt', 100) ?? '').split(' ').filter(Boolean);
  for (const prompt of prompts) {
    if (prompt !== 'none' && prompt !== 'login') {
      throw new AuthorizeError('invalid_request', `prompt ${prompt} is not supported: send none or login`);
    }
  }
  // OpenID Connect Core §3.1.2.1: none with any other value is an error.
  if (prompts.includes('none') && prompts.length > 1) {
    throw new AuthorizeError('invalid_request', 'prompt=none may not be combined with another value');
  }
  draft.request.prompt = prompts[0] as AuthorizationRequest['prompt'];
  const maxAge = single(draft, 'max_age', 20);
  if (maxAge !== undefined) {
    if (!/^\d{1,9}$/.test(maxAge)) throw new AuthorizeError('invalid_request', 'max_age must be a number of seconds');
    draft.request.maxAgeSeconds = Number(maxAge);
  }
}

function checkAcrValues(draft: Draft) {
  const values = (single(draft, 'acr_values', 200) ?? '').split(' ').filter(Boolean);
  for (const value of values) {
    if (!/^[A-Za-z0-9:._-]+$/.test(value)) throw new AuthorizeError('invalid_request', `acr_values holds "${value}"`);
  }
  // Voluntary claims (OpenID Connect Core §5.5.1.1): values this provider does not know are left out.
  draft.request.acrValues = values.flatMap((value) => ACR_VALUES.filter((known) => known === value));
}

function checkHints(draft: Draft) {
  draft.request.nonce = single(draft, 'nonce', 500);
  draft.request.loginHint = single(draft, 'login_hint', 150);
  draft.request.uiLocales = single(draft, 'ui_locales', 100);
}
