import assert from 'node:assert/strict';
import * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import { startServiceAtIssuer } from './issuer.js';
import { ADMIN_TOKEN, expectStatus, type Service, type ServiceOptions } from './service.js';
import type { SignInBrowser } from './sign-in-browser.js';

// What the OpenID Connect test files share: the service at a fixed issuer, clients registered
// through the admin API, and panva's openid-client, unmodified, as the app (CONTRACT §18).

export const PASSWORD = 'correct horse battery';
export const CALLBACK = 'https://app.example.com/callback';

/** The service at a fixed issuer (http://127.0.0.1:<port>), as openid-client discovers it. */
export interface Provider {
  service: Service;
  issuer: string;
  close(): Promise<void>;
}

export async function startProvider(options: ServiceOptions = {}): Promise<Provider> {
  const stack = await startServiceAtIssuer(options);
  return { service: stack.service, issuer: stack.origin, close: () => stack.close() };
}

let count = 0;
/** A name no other test of the run uses. */
export const nextName = (prefix: string) => `${prefix}-${++count}`;

/** A client as POST /admin/clients answered it (with its secret, unless it is public). */
export type RegisteredClient = Record<string, any> & { client_id: string; client_secret?: string };

/** POST /admin/clients: a web app redirecting to CALLBACK, plus `body`. */
export function registerClient(service: Service, body: Record<string, unknown> = {}): Promise<RegisteredClient> {
  return expectStatus(
    service.call('/admin/clients', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: { name: 'Acme web', redirect_uris: [CALLBACK], ...body },
    }),
    201,
  );
}

/**
 * openid-client's configuration for a registered client, from discovery: only the issuer, the
 * client's id, its secret (client.None() for a public client) and `metadata` such as the ID token
 * alg it registered. http: the test server has no TLS.
 */
export function configOf(
  issuer: string,
  registered: RegisteredClient,
  metadata: Partial<client.ClientMetadata> = {},
  authentication?: client.ClientAuth,
): Promise<client.Configuration> {
  const options = { execute: [client.allowInsecureRequests] };
  const clientMetadata = registered.client_secret ? { client_secret: registered.client_secret, ...metadata } : metadata;
  return client.discovery(
    new URL(issuer),
    registered.client_id,
    clientMetadata,
    authentication ?? (registered.client_secret ? undefined : client.None()),
    options,
  );
}

export interface AuthorizationRequest {
  url: URL;
  verifier: string;
  state: string;
  nonce?: string;
}

/**
 * An authorization request as an app makes it: PKCE, state and a nonce, plus `extra` (a parameter
 * set to undefined is left out: `{nonce: undefined}` sends none, as oidc-client-ts does).
 */
export async function authorizationRequest(
  config: client.Configuration,
  extra: Record<string, string | undefined> = {},
): Promise<AuthorizationRequest> {
  const verifier = client.randomPKCECodeVerifier();
  const parameters: Record<string, string | undefined> = {
    redirect_uri: CALLBACK,
    scope: 'openid profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: client.randomState(),
    nonce: client.randomNonce(),
    ...extra,
  };
  const sent = Object.fromEntries(
    Object.entries(parameters).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return { url: client.buildAuthorizationUrl(config, sent), verifier, state: sent.state ?? '', nonce: sent.nonce };
}

/** The app's side of the redirect back: openid-client checks state, iss, the code and the ID token. */
export function exchange(config: client.Configuration, back: string | URL, request: AuthorizationRequest) {
  return client.authorizationCodeGrant(config, new URL(back), {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}

/** Signs in with the password alone at the hosted sign-in and answers where the browser lands. */
export async function signInWithPassword(
  browser: SignInBrowser,
  url: URL,
  username: string,
  password = PASSWORD,
): Promise<URL> {
  const signIn = await browser.startSignIn(url);
  const done = await signIn.password(username, password);
  assert.ok(done.location, `the sign-in did not finish: ${JSON.stringify(done)}`);
  return new URL(done.location);
}

/** Opens the authorization URL and expects to be sent straight back to the app (the sign-in session answered). */
export async function expectStraightBack(browser: SignInBrowser, url: URL): Promise<URL> {
  const opened = await browser.authorize(url);
  assert.ok('back' in opened, 'the authorization request asked the person to sign in again');
  return opened.back;
}

/** The authorization response's parameters, as the app reads them. */
export function paramsOf(location: string | URL): Record<string, string> {
  return Object.fromEntries(new URL(location).searchParams);
}

/** A user with an authenticator app, and the app itself (codes at the service's clock). */
export async function createTotpUser(service: Service, username: string) {
  const userId = await service.createUser(username, PASSWORD);
  const token = await service.accessToken(username, PASSWORD);
  const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
  const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
  const code = () => app.generate({ timestamp: service.clock.now().getTime() });
  await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code() } }), 200);
  return {
    userId,
    username,
    /**
     * A code of a step not used before: the clock moves a step on first, as a step once accepted
     * is never accepted again (CONTRACT §11).
     */
    code() {
      service.clock.advance(30);
      return code();
    },
    /** The current step's code, the clock left where it is. */
    currentCode: code,
    /** A code that is wrong now. */
    wrongCode: () => (code() === '000000' ? '000001' : '000000'),
  };
}
