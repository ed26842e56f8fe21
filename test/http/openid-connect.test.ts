// OpenID Connect (CONTRACT §18) with panva's openid-client, unmodified: only the issuer, the
// client's id (and secret) and its redirect URI are configured. The browser's part is played by
// SignInBrowser, which calls the hosted sign-in's API as the page does (the page itself is tested
// in Chromium).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import {
  authorizationRequest,
  CALLBACK,
  configOf,
  createTotpUser,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  type RegisteredClient,
  registerClient as registerAt,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { expectStatus, nextPhone, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';

let provider: Provider;
let service: Service;
let issuer: string;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  issuer = provider.issuer;
});
after(() => provider.close());

const next = nextName;
const registerClient = (body: Record<string, unknown> = {}) => registerAt(service, body);

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
    const config = await configOf(issuer, registered);
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
    const now = Math.floor(service.clock.now().getTime() / 1000);
    assert.equal(claims.iat, now);
    assert.equal(claims.exp, now + service.config.accessTokenTtlSeconds);
    assert.equal(claims.auth_time, now, 'the sign-in just happened');
    assert.equal(typeof claims.sid, 'string');
    const access = decodeJwt(tokens.access_token);
    assert.equal(access.sub, userId, 'the same sub in both tokens');
    assert.equal(access.client_id, registered.client_id);
    assert.equal(access.scope, 'openid profile');
    assert.deepEqual(access.amr, ['pwd']);
    assert.equal(access.acr, 'aal1');
    assert.equal(access.auth_time, claims.auth_time);

    const info = await client.fetchUserInfo(config, tokens.access_token, userId);
    assert.deepEqual(info, { sub: userId, preferred_username: username });
    // The access token works on the API like any other.
    assert.equal((await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200)).enabled, false);
  });

  test('with an authenticator app: the second step asks for it, and the tokens say pwd+otp, aal2', async () => {
    const user = await createTotpUser(service, next('oidc-totp'));
    const registered = await registerClient();
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(issuer).startSignIn(request.url);
    const second = await signIn.password(user.username, PASSWORD);
    assert.equal(second.step, 'second_factor');
    assert.equal(second.mfa_type, 'totp');
    assert.equal(second.username, user.username);
    const wrong = await signIn.secondFactor({ mfa_code: user.wrongCode() }, 400);
    assert.equal(wrong.error, 'invalid_grant');
    const done = await signIn.secondFactor({ mfa_code: user.code() });
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    assert.equal(tokens.claims()?.acr, 'aal2');
    assert.equal(decodeJwt(tokens.access_token).acr, 'aal2');
  });

  test('with SMS: the password step sends the code; the code signs in', async () => {
    const phone = nextPhone();
    const { username } = await service.createUserWithMfa(next('oidc-sms'), PASSWORD, phone);
    const registered = await registerClient();
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(issuer).startSignIn(request.url);
    const second = await signIn.password(username, PASSWORD);
    assert.equal(second.mfa_type, 'sms');
    const done = await signIn.secondFactor({ mfa_code: service.twilio.lastCodeFor(`+${phone}`) });
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'sms']);
  });
});

describe('the code flow’s tokens', () => {
  let registered: RegisteredClient;
  let config: client.Configuration;
  before(async () => {
    registered = await registerClient({ name: 'Token tests' });
    config = await configOf(issuer, registered);
  });

  /** A new password-only user signed in through `configuration`: the request and the tokens. */
  async function signedIn(configuration = config, extra: Record<string, string | undefined> = {}) {
    const username = next('tokens');
    const userId = await service.createUser(username, PASSWORD);
    const request = await authorizationRequest(configuration, { scope: 'openid offline_access', ...extra });
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    return { username, userId, request, tokens: await exchange(configuration, back, request) };
  }

  test('without a nonce in the request (oidc-client-ts sends none by default) the ID token has none, and openid-client accepts it', async () => {
    const { request, tokens } = await signedIn(config, { nonce: undefined });
    assert.equal(request.url.searchParams.get('nonce'), null);
    assert.ok(tokens.claims());
    assert.equal('nonce' in (tokens.claims() ?? {}), false);
  });

  for (const alg of ['ES256', 'EdDSA'] as const) {
    test(`a client registered with id_token_signed_response_alg ${alg} gets ${alg} ID tokens, which openid-client verifies with the JWKS`, async () => {
      const algClient = await registerClient({ id_token_signed_response_alg: alg });
      const algConfig = await configOf(issuer, algClient, { id_token_signed_response_alg: alg });
      const { userId, tokens } = await signedIn(algConfig);
      const header = decodeProtectedHeader(tokens.id_token ?? '');
      assert.equal(header.alg, alg);
      const { keys } = await expectStatus(service.call('/.well-known/jwks.json'), 200);
      assert.equal(keys.find((key: { kid: string }) => key.kid === header.kid)?.alg, alg);
      assert.equal(tokens.claims()?.sub, userId);
    });
  }

  test('refresh rotation works for code-flow tokens (openid-client refreshTokenGrant), keeping amr, acr and auth_time; a spent one presented again revokes the login', async () => {
    const { tokens } = await signedIn();
    const first = decodeJwt(tokens.access_token);
    service.clock.advance(60);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '');
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    const second = decodeJwt(refreshed.access_token);
    assert.deepEqual(second.amr, first.amr);
    assert.equal(second.acr, first.acr);
    assert.equal(second.auth_time, first.auth_time);
    assert.equal(second.sid, first.sid, 'the same login');
    await expectStatus(service.call('/mfa/', { token: refreshed.access_token }), 200);

    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), (error: any) => {
      assert.equal(error.error, 'invalid_grant');
      return true;
    });
    await assert.rejects(client.refreshTokenGrant(config, refreshed.refresh_token ?? ''), { error: 'invalid_grant' });
    await expectStatus(service.call('/mfa/', { token: refreshed.access_token }), 401);
  });

  test('introspection and revocation work on code-flow tokens (openid-client tokenIntrospection, tokenRevocation)', async () => {
    const { userId, tokens } = await signedIn();
    const access = await client.tokenIntrospection(config, tokens.access_token);
    assert.equal(access.active, true);
    assert.equal(access.sub, userId);
    assert.equal(access.client_id, registered.client_id);
    assert.equal(access.scope, 'openid offline_access');
    assert.equal(access.acr, 'aal1');
    const refresh = await client.tokenIntrospection(config, tokens.refresh_token ?? '');
    assert.equal(refresh.active, true);
    assert.equal(refresh.token_type, 'refresh_token');

    await client.tokenRevocation(config, tokens.refresh_token ?? '');
    assert.deepEqual(await client.tokenIntrospection(config, tokens.refresh_token ?? ''), { active: false });
    assert.deepEqual(await client.tokenIntrospection(config, tokens.access_token), { active: false });
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), { error: 'invalid_grant' });
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 401);
  });

  test('another client’s refresh token is refused, and its revocation by another client does nothing', async () => {
    const { tokens } = await signedIn();
    const other = await configOf(issuer, await registerClient({ name: 'Other app' }));
    await assert.rejects(client.refreshTokenGrant(other, tokens.refresh_token ?? ''), { error: 'invalid_grant' });
    await client.tokenRevocation(other, tokens.refresh_token ?? '');
    assert.ok((await client.refreshTokenGrant(config, tokens.refresh_token ?? '')).access_token);
  });

  test('userinfo needs an access token granted openid: without it, 403 insufficient_scope with RFC 6750’s challenge', async () => {
    const { userId, tokens } = await signedIn(config, { scope: 'profile', nonce: undefined });
    assert.equal(tokens.id_token, undefined, 'no openid, no ID token');
    const response = await service.call('/mfa/oauth2/userinfo/', { token: tokens.access_token });
    assert.equal(response.status, 403);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer .*error="insufficient_scope"/);
    assert.equal(((await response.json()) as { error: string }).error, 'insufficient_scope');
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, userId));
    const unauthenticated = await service.call('/mfa/oauth2/userinfo/');
    assert.equal(unauthenticated.status, 401);
    assert.match(unauthenticated.headers.get('www-authenticate') ?? '', /^Bearer/);
  });

  test('step-up (CONTRACT §14): a code-flow login that carried the second factor may make a sensitive call; a password-only one gets 401', async () => {
    const user = await createTotpUser(service, next('step-up'));
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(issuer).startSignIn(request.url);
    await signIn.password(user.username, PASSWORD);
    const done = await signIn.secondFactor({ mfa_code: user.code() });
    const strong = await exchange(config, done.location, request);
    const codes = await expectStatus(
      service.call('/mfa/recovery/', { method: 'POST', token: strong.access_token }),
      200,
    );
    assert.equal(codes.backup_codes.length, 10);

    // A password-only code-flow login turns MFA on (allowed: it is fresh), and is still only aal1.
    const { tokens } = await signedIn();
    const token = tokens.access_token;
    const app = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const code = (OTPAuth.URI.parse(app.otpauth_uri) as OTPAuth.TOTP).generate({
      timestamp: service.clock.now().getTime(),
    });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code } }), 200);
    // It may make the first set of backup codes (it just proved the new factor: issue 29), no more.
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token }), 200);
    const refused = await service.call('/mfa/recovery/', { method: 'POST', token });
    assert.equal(refused.status, 401);
    assert.match(
      refused.headers.get('www-authenticate') ?? '',
      /error="insufficient_user_authentication".*acr_values="aal2"/,
    );
    assert.equal(((await refused.json()) as { error: string }).error, 'insufficient_user_authentication');
  });
});
