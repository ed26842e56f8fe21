// OpenID Connect (CONTRACT §18) with panva's openid-client, unmodified: only the issuer, the
// client's id (and secret) and its redirect URI are configured. The browser's part is played by
// SignInBrowser, which calls the hosted sign-in's API as the page does (the page itself is tested
// in Chromium).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import { startServiceAtIssuer } from '../support/issuer.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';

const PASSWORD = 'correct horse battery';
const CALLBACK = 'https://app.example.com/callback';

let stack: Awaited<ReturnType<typeof startServiceAtIssuer>>;
let service: Service;
let issuer: string;

before(async () => {
  stack = await startServiceAtIssuer();
  service = stack.service;
  issuer = stack.origin;
});
after(() => stack.close());

let count = 0;
const next = (prefix: string) => `${prefix}-${++count}`;

async function registerClient(body: Record<string, unknown> = {}) {
  return expectStatus(
    service.call('/admin/clients', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: { name: 'Acme web', redirect_uris: [CALLBACK], ...body },
    }),
    201,
  ) as Promise<Record<string, any>>;
}

/** openid-client's configuration for a registered client, from discovery (http: the test server has no TLS). */
async function configOf(registered: Record<string, any>): Promise<client.Configuration> {
  const options = { execute: [client.allowInsecureRequests] };
  return registered.client_secret
    ? client.discovery(new URL(issuer), registered.client_id, registered.client_secret, undefined, options)
    : client.discovery(new URL(issuer), registered.client_id, undefined, client.None(), options);
}

/** An authorization request as an app makes it: PKCE, state and nonce, plus `extra`. */
async function authorizationRequest(config: client.Configuration, extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

/** The app's side of the redirect back: openid-client checks state, iss, the code and the ID token. */
function exchange(
  config: client.Configuration,
  back: string | URL,
  request: { verifier: string; state: string; nonce: string },
) {
  return client.authorizationCodeGrant(config, new URL(back), {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
}

describe('discovery (OpenID Connect Discovery 1.0)', () => {
  test('names every endpoint, code flow only, PKCE S256, RS256 ID tokens, iss in responses; RFC 8414 says the same', async () => {
    const oidc = await expectStatus(service.call('/.well-known/openid-configuration'), 200);
    assert.equal(oidc.issuer, issuer);
    for (const [field, path] of [
      ['authorization_endpoint', '/mfa/oauth2/authorize/'],
      ['token_endpoint', '/mfa/oauth2/token/'],
      ['userinfo_endpoint', '/mfa/oauth2/userinfo/'],
      ['end_session_endpoint', '/mfa/oauth2/logout/'],
      ['revocation_endpoint', '/mfa/oauth2/revoke/'],
      ['introspection_endpoint', '/mfa/oauth2/introspect/'],
    ] as const) {
      assert.equal(oidc[field], `${issuer}${path}`, field);
    }
    assert.deepEqual(oidc.response_types_supported, ['code']);
    assert.deepEqual(oidc.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(oidc.subject_types_supported, ['public']);
    assert.equal(oidc.id_token_signing_alg_values_supported[0], 'RS256');
    assert.ok(oidc.grant_types_supported.includes('authorization_code'));
    assert.ok(oidc.token_endpoint_auth_methods_supported.includes('none'));
    for (const scope of ['openid', 'profile', 'offline_access']) assert.ok(oidc.scopes_supported.includes(scope));
    assert.equal(oidc.authorization_response_iss_parameter_supported, true);
    assert.deepEqual(await expectStatus(service.call('/.well-known/oauth-authorization-server'), 200), oidc);
  });
});

describe('signing in to a web app (confidential client)', () => {
  test('password only: openid-client gets a code, tokens and an RS256 ID token with every claim; userinfo answers', async () => {
    const username = next('oidc');
    const userId = await service.createUser(username, PASSWORD);
    const registered = await registerClient();
    const config = await configOf(registered);
    const request = await authorizationRequest(config);
    const browser = new SignInBrowser(issuer);
    const signIn = await browser.startSignIn(request.url);
    assert.equal(signIn.opened.client_name, 'Acme web');
    assert.equal(signIn.opened.step, 'password');
    const done = await signIn.password(username, PASSWORD);
    assert.ok(done.location.startsWith(`${CALLBACK}?`), done.location);
    const back = new URL(done.location);
    assert.equal(back.searchParams.get('iss'), issuer, 'RFC 9207');
    assert.equal(back.searchParams.get('state'), request.state);

    const tokens = await exchange(config, back, request);
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    assert.ok(tokens.refresh_token);
    assert.equal(decodeProtectedHeader(tokens.id_token ?? '').alg, 'RS256');
    const claims = tokens.claims();
    assert.ok(claims);
    assert.equal(claims.iss, issuer);
    assert.equal(claims.sub, userId);
    assert.equal(claims.aud, registered.client_id);
    assert.equal(claims.nonce, request.nonce);
    assert.deepEqual(claims.amr, ['pwd']);
    assert.equal(claims.acr, 'aal1');
    assert.equal(typeof claims.auth_time, 'number');
    assert.equal(typeof claims.sid, 'string');
    const access = decodeJwt(tokens.access_token);
    assert.equal(access.sub, userId);
    assert.equal(access.client_id, registered.client_id);
    assert.equal(access.scope, 'openid profile');
    assert.deepEqual(access.amr, ['pwd']);

    const info = await client.fetchUserInfo(config, tokens.access_token, userId);
    assert.deepEqual(info, { sub: userId, preferred_username: username });
    // The access token works on the API like any other.
    assert.equal((await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200)).enabled, false);
  });

  test('with an authenticator app: the second step asks for it, and the tokens say pwd+otp, aal2', async () => {
    const username = next('oidc-totp');
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    const code = () => app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code() } }), 200);
    service.clock.advance(30);

    const registered = await registerClient();
    const config = await configOf(registered);
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(issuer).startSignIn(request.url);
    const second = await signIn.password(username, PASSWORD);
    assert.equal(second.step, 'second_factor');
    assert.equal(second.mfa_type, 'totp');
    assert.equal(second.username, username);
    const wrong = await signIn.secondFactor({ mfa_code: code() === '000000' ? '000001' : '000000' }, 400);
    assert.equal(wrong.error, 'invalid_grant');
    const done = await signIn.secondFactor({ mfa_code: code() });
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    assert.equal(tokens.claims()?.acr, 'aal2');
  });

  test('with SMS: the password step sends the code; the code signs in', async () => {
    const phone = nextPhone();
    const { username } = await service.createUserWithMfa(next('oidc-sms'), PASSWORD, phone);
    const registered = await registerClient();
    const config = await configOf(registered);
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(issuer).startSignIn(request.url);
    const second = await signIn.password(username, PASSWORD);
    assert.equal(second.mfa_type, 'sms');
    const done = await signIn.secondFactor({ mfa_code: service.twilio.lastCodeFor(`+${phone}`) });
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'sms']);
  });
});
