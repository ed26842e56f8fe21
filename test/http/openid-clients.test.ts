// OpenID Connect clients (CONTRACT §18): their registration through the admin API and the rules
// on their metadata, CORS for their web origins, and the kinds of app the browser flow serves
// (a public native app on a loopback or private-use redirect, a confidential one posting its
// secret), each signing in with panva's openid-client, unmodified.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import {
  authorizationRequest,
  CALLBACK,
  configOf,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  paramsOf,
  registerClient,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
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

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  service.call(path, { ...init, token: ADMIN_TOKEN });

/** A user who signed in to `registered` through the browser flow, and the tokens the app got. */
async function signedInThrough(registered: Awaited<ReturnType<typeof registerClient>>) {
  const username = nextName('client-user');
  await service.createUser(username, PASSWORD);
  const config = await configOf(issuer, registered);
  const request = await authorizationRequest(config, { scope: 'openid offline_access' });
  const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
  return { config, tokens: await exchange(config, back, request) };
}

/** POST the introspection endpoint as `registered` (client_secret_basic). */
function introspect(registered: { client_id: string; client_secret?: string }, token: string) {
  const basic = Buffer.from(`${registered.client_id}:${registered.client_secret ?? ''}`).toString('base64');
  return service.call('/mfa/oauth2/introspect/', {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
}

describe('registering clients (admin API)', () => {
  const everyField = {
    name: 'Every field',
    mfa_challenge: 'error',
    redirect_uris: [CALLBACK, 'http://127.0.0.1/callback', 'com.example.app:/oauth'],
    post_logout_redirect_uris: ['https://app.example.com/signed-out'],
    token_endpoint_auth_method: 'client_secret_post',
    allowed_scopes: 'openid profile',
    web_origins: ['https://app.example.com', 'http://localhost:3000'],
    id_token_signed_response_alg: 'ES256',
    mfa_policy: 'required',
    remember_device_days: 30,
  };

  test('POST /admin/clients answers 201 with every field as given and a client_secret shown this once', async () => {
    const created = await registerClient(service, everyField);
    const { client_id, client_secret, ...fields } = created;
    assert.deepEqual(fields, everyField);
    assert.equal(typeof client_id, 'string');
    assert.ok(typeof client_secret === 'string' && client_secret.length >= 43, 'at least 256 random bits');
    const shown = await expectStatus(admin(`/admin/clients/${client_id}`), 200);
    assert.equal(shown.client_secret, undefined, 'the secret is shown once, at registration');
    assert.ok(!(await service.dumpDatabase()).includes(client_secret), 'the secret is stored hashed');
  });

  test('a client given only a name gets the documented defaults: no browser flow, RS256, basic auth, optional MFA', async () => {
    const { client_id, client_secret, ...fields } = await expectStatus(
      admin('/admin/clients', { method: 'POST', body: { name: 'Defaults' } }),
      201,
    );
    assert.ok(client_id && client_secret);
    assert.deepEqual(fields, {
      name: 'Defaults',
      mfa_challenge: 'seed',
      redirect_uris: [],
      post_logout_redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      allowed_scopes: 'openid profile offline_access',
      web_origins: [],
      id_token_signed_response_alg: 'RS256',
      mfa_policy: 'optional',
      remember_device_days: 0,
    });
  });

  test('a public client (token_endpoint_auth_method none) is given no secret, and has none to rotate', async () => {
    const created = await registerClient(service, { token_endpoint_auth_method: 'none' });
    assert.equal('client_secret' in created, false);
    assert.equal(created.token_endpoint_auth_method, 'none');
    const rotated = await expectStatus(admin(`/admin/clients/${created.client_id}/secret`, { method: 'POST' }), 400);
    assert.equal(rotated.error, 'invalid_request');
  });

  test('GET /admin/clients lists the clients and GET /admin/clients/{id} shows one, never with a secret; unknown ids are 404', async () => {
    const first = await registerClient(service, { name: 'Listed one' });
    const second = await registerClient(service, { name: 'Listed two', token_endpoint_auth_method: 'none' });
    const { clients } = await expectStatus(admin('/admin/clients'), 200);
    for (const registered of [first, second]) {
      const { client_secret: _secret, ...settings } = registered;
      const listed = clients.find((entry: { client_id: string }) => entry.client_id === registered.client_id);
      assert.deepEqual(listed, settings);
      assert.deepEqual(await expectStatus(admin(`/admin/clients/${registered.client_id}`), 200), settings);
    }
    for (const entry of clients) assert.equal(entry.client_secret, undefined);
    assert.equal((await expectStatus(admin('/admin/clients/no-such-client'), 404)).error, 'not_found');
    assert.equal((await expectStatus(service.call('/admin/clients'), 401)).error, 'invalid_token');
  });

  test('PATCH /admin/clients/{id} changes each field on its own and leaves the others as they were', async () => {
    const created = await registerClient(service, { name: 'Patched' });
    const { client_secret: _secret, ...expected } = created;
    const changes: Record<string, unknown>[] = [
      { name: 'Patched, renamed' },
      { mfa_challenge: 'error' },
      { redirect_uris: ['https://app.example.com/other-callback', 'http://[::1]/cb'] },
      { post_logout_redirect_uris: ['https://app.example.com/bye'] },
      { token_endpoint_auth_method: 'client_secret_post' },
      { allowed_scopes: 'openid' },
      { web_origins: ['https://spa.example.com'] },
      { id_token_signed_response_alg: 'EdDSA' },
      { mfa_policy: 'required' },
    ];
    for (const change of changes) {
      Object.assign(expected, change);
      const answer = await expectStatus(
        admin(`/admin/clients/${created.client_id}`, { method: 'PATCH', body: change }),
        200,
      );
      assert.deepEqual(answer, expected, JSON.stringify(change));
      assert.deepEqual(await expectStatus(admin(`/admin/clients/${created.client_id}`), 200), expected);
    }
    assert.equal(
      (await expectStatus(admin('/admin/clients/no-such-client', { method: 'PATCH', body: { name: 'x' } }), 404)).error,
      'not_found',
    );
  });

  test('PATCH to public drops the secret; back to confidential issues a new one, shown once', async () => {
    const created = await registerClient(service);
    const old = { client_id: created.client_id, client_secret: created.client_secret };
    await expectStatus(introspect(old, 'some-token'), 200);
    const madePublic = await expectStatus(
      admin(`/admin/clients/${created.client_id}`, { method: 'PATCH', body: { token_endpoint_auth_method: 'none' } }),
      200,
    );
    assert.equal(madePublic.client_secret, undefined);
    assert.equal((await expectStatus(introspect(old, 'some-token'), 401)).error, 'invalid_client');
    const madeConfidential = await expectStatus(
      admin(`/admin/clients/${created.client_id}`, {
        method: 'PATCH',
        body: { token_endpoint_auth_method: 'client_secret_basic' },
      }),
      200,
    );
    assert.equal(typeof madeConfidential.client_secret, 'string');
    assert.notEqual(madeConfidential.client_secret, old.client_secret);
    await expectStatus(introspect(madeConfidential, 'some-token'), 200);
  });

  test('POST /admin/clients/{id}/secret rotates the secret: the new one works, the old one is refused', async () => {
    const created = await registerClient(service);
    await expectStatus(introspect(created, 'some-token'), 200);
    const rotated = await expectStatus(admin(`/admin/clients/${created.client_id}/secret`, { method: 'POST' }), 201);
    assert.equal(rotated.client_id, created.client_id);
    assert.notEqual(rotated.client_secret, created.client_secret);
    const refused = await introspect(created, 'some-token');
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /^Basic/);
    await expectStatus(introspect(rotated, 'some-token'), 200);
    await expectStatus(admin('/admin/clients/no-such-client/secret', { method: 'POST' }), 404);
  });

  test('DELETE /admin/clients/{id} removes the client: its refresh tokens stop working and its sign-in links show the 400 page', async () => {
    const registered = await registerClient(service);
    const resourceServer = await registerClient(service, { name: 'Resource server', redirect_uris: [] });
    const { tokens } = await signedInThrough(registered);
    const refreshToken = tokens.refresh_token ?? '';
    assert.equal((await expectStatus(introspect(resourceServer, refreshToken), 200)).active, true);

    await expectStatus(admin(`/admin/clients/${registered.client_id}`, { method: 'DELETE' }), 204);
    assert.deepEqual(await expectStatus(introspect(resourceServer, refreshToken), 200), { active: false });
    const refresh = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: registered.client_id,
        client_secret: registered.client_secret,
      },
    });
    assert.equal(refresh.status, 401, 'the client no longer authenticates');
    await expectStatus(admin(`/admin/clients/${registered.client_id}`), 404);
    await expectStatus(admin(`/admin/clients/${registered.client_id}`, { method: 'DELETE' }), 404);
    const config = await configOf(issuer, registered);
    const page = await fetch((await authorizationRequest(config)).url, { redirect: 'manual' });
    assert.equal(page.status, 400);
    assert.equal(page.headers.get('location'), null);
  });
});

describe('client metadata is checked (400 invalid_client_metadata naming the field)', () => {
  const refused: [string, Record<string, unknown>, string][] = [
    ['a redirect URI with a fragment', { redirect_uris: ['https://app.example.com/cb#here'] }, 'redirect_uris[0]'],
    ['a relative redirect URI', { redirect_uris: [CALLBACK, '/callback'] }, 'redirect_uris[1]'],
    ['http to a host other than loopback', { redirect_uris: ['http://app.example.com/cb'] }, 'redirect_uris[0]'],
    [
      'http to a name that only starts like loopback',
      { redirect_uris: ['http://127.0.0.1.nip.io/cb'] },
      'redirect_uris[0]',
    ],
    ['a javascript: URI', { redirect_uris: ['javascript:alert(1)'] }, 'redirect_uris[0]'],
    ['a JavaScript: URI in capitals', { redirect_uris: ['JavaScript:alert(1)'] }, 'redirect_uris[0]'],
    ['a data: URI', { redirect_uris: ['data:text/html,<script>alert(1)</script>'] }, 'redirect_uris[0]'],
    ['a vbscript: URI', { redirect_uris: ['vbscript:msgbox(1)'] }, 'redirect_uris[0]'],
    ['a file: URI', { redirect_uris: ['file:///etc/passwd'] }, 'redirect_uris[0]'],
    ['a private-use scheme that is not a reverse domain name', { redirect_uris: ['myapp:/cb'] }, 'redirect_uris[0]'],
    ['a wildcard', { redirect_uris: ['https://*.example.com/cb'] }, 'redirect_uris[0]'],
    [
      'a logout URI with a fragment',
      { post_logout_redirect_uris: ['https://app.example.com/#bye'] },
      'post_logout_redirect_uris[0]',
    ],
    [
      'a logout URI to http on another host',
      { post_logout_redirect_uris: ['http://app.example.com/bye'] },
      'post_logout_redirect_uris[0]',
    ],
    ['an unknown ID token alg', { id_token_signed_response_alg: 'HS256' }, 'id_token_signed_response_alg'],
    ['alg none', { id_token_signed_response_alg: 'none' }, 'id_token_signed_response_alg'],
    [
      'an unknown token endpoint auth method',
      { token_endpoint_auth_method: 'private_key_jwt' },
      'token_endpoint_auth_method',
    ],
    ['an unknown mfa_policy', { mfa_policy: 'always' }, 'mfa_policy'],
    ['a device remembered for more than a year', { remember_device_days: 400 }, 'remember_device_days'],
    ['a negative number of days', { remember_device_days: -1 }, 'remember_device_days'],
    ['a web origin with a path', { web_origins: ['https://spa.example.com/app'] }, 'web_origins[0]'],
    ['a web origin with a trailing slash', { web_origins: ['https://spa.example.com/'] }, 'web_origins[0]'],
    ['an http web origin on another host', { web_origins: ['http://spa.example.com'] }, 'web_origins[0]'],
    ['a scope that is not a scope token', { allowed_scopes: 'openid "profile"' }, 'allowed_scopes'],
  ];
  for (const [what, metadata, field] of refused) {
    test(`${what}: 400 naming ${field}, on registration and on PATCH`, async () => {
      const before = (await expectStatus(admin('/admin/clients'), 200)).clients.length;
      const created = await expectStatus(
        admin('/admin/clients', { method: 'POST', body: { name: 'Refused', ...metadata } }),
        400,
      );
      assert.equal(created.error, 'invalid_client_metadata');
      assert.ok(created.error_description.startsWith(`${field}:`), created.error_description);
      assert.equal((await expectStatus(admin('/admin/clients'), 200)).clients.length, before, 'nothing registered');

      const existing = await registerClient(service);
      const patched = await expectStatus(
        admin(`/admin/clients/${existing.client_id}`, { method: 'PATCH', body: metadata }),
        400,
      );
      assert.ok(patched.error_description.startsWith(`${field}:`), patched.error_description);
      const { client_secret: _secret, ...unchanged } = existing;
      assert.deepEqual(await expectStatus(admin(`/admin/clients/${existing.client_id}`), 200), unchanged);
    });
  }

  test('accepted: https, loopback http on any address form, a reverse-domain private-use scheme', async () => {
    const uris = [
      'https://app.example.com/callback?tenant=1',
      'http://127.0.0.1/callback',
      'http://[::1]:8080/callback',
      'http://localhost/callback',
      'com.example.app:/cb',
      'com.example.app:/oauth2redirect/example-provider',
    ];
    const created = await registerClient(service, { redirect_uris: uris });
    assert.deepEqual(created.redirect_uris, uris);
  });
});

describe('CORS for single-page apps (web_origins)', () => {
  const SPA = 'https://spa.example.com';
  let registered: Awaited<ReturnType<typeof registerClient>>;

  before(async () => {
    registered = await registerClient(service, { web_origins: [SPA], token_endpoint_auth_method: 'none' });
    // Each node reads the list of origins at most every 10 s.
    service.clock.advance(11);
  });

  function preflight(path: string, origin: string) {
    return service.call(path, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
  }

  test('the token, userinfo and revocation endpoints answer a preflight from a registered web origin with that origin', async () => {
    for (const path of ['/mfa/oauth2/token/', '/mfa/oauth2/userinfo/', '/mfa/oauth2/revoke/']) {
      const response = await preflight(path, SPA);
      assert.equal(response.status, 204, path);
      assert.equal(response.headers.get('access-control-allow-origin'), SPA, path);
      assert.match(response.headers.get('access-control-allow-methods') ?? '', /POST/, path);
      assert.match(response.headers.get('access-control-allow-headers') ?? '', /authorization/i, path);
      assert.equal(response.headers.get('access-control-allow-credentials'), null, 'cookies never go cross-origin');
    }
  });

  test('and their answers carry Access-Control-Allow-Origin for that origin: a single-page app gets and uses its tokens', async () => {
    const username = nextName('spa-user');
    const userId = await service.createUser(username, PASSWORD);
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config, { scope: 'openid offline_access' });
    const back = paramsOf(await signInWithPassword(new SignInBrowser(issuer), request.url, username));
    const token = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      headers: { origin: SPA, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.code ?? '',
        redirect_uri: CALLBACK,
        code_verifier: request.verifier,
        client_id: registered.client_id,
      }).toString(),
    });
    assert.equal(token.status, 200);
    assert.equal(token.headers.get('access-control-allow-origin'), SPA);
    const tokens = (await token.json()) as Record<string, string>;
    const info = await service.call('/mfa/oauth2/userinfo/', {
      token: tokens.access_token,
      headers: { origin: SPA },
    });
    assert.equal(info.headers.get('access-control-allow-origin'), SPA);
    assert.equal(((await info.json()) as { sub: string }).sub, userId);
    const revoked = await service.call('/mfa/oauth2/revoke/', {
      method: 'POST',
      headers: { origin: SPA, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.refresh_token ?? '', client_id: registered.client_id }).toString(),
    });
    assert.equal(revoked.status, 200);
    assert.equal(revoked.headers.get('access-control-allow-origin'), SPA);
  });

  test('another origin gets no CORS header from them, preflight or request', async () => {
    for (const origin of ['https://evil.example.com', 'https://spa.example.com.evil.example', 'null']) {
      for (const path of ['/mfa/oauth2/token/', '/mfa/oauth2/userinfo/', '/mfa/oauth2/revoke/']) {
        const response = await preflight(path, origin);
        assert.equal(response.headers.get('access-control-allow-origin'), null, `${origin} ${path}`);
        assert.equal(response.headers.get('access-control-allow-methods'), null, `${origin} ${path}`);
      }
      const token = await service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { origin },
        body: { grant_type: 'password', username: 'nobody', password: 'wrong' },
      });
      assert.equal(token.headers.get('access-control-allow-origin'), null, origin);
    }
  });

  test('the key set and the discovery documents answer any origin with *', async () => {
    for (const path of [
      '/.well-known/jwks.json',
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
    ]) {
      for (const origin of [SPA, 'https://anyone.example.org']) {
        const response = await service.call(path, { headers: { origin } });
        assert.equal(response.status, 200, path);
        assert.equal(response.headers.get('access-control-allow-origin'), '*', path);
        const preflighted = await preflight(path, origin);
        assert.equal(preflighted.headers.get('access-control-allow-origin'), '*', path);
      }
    }
  });

  test('/mfa/, the authorization endpoint, the sign-in API and the admin API send no CORS headers, even to a registered web origin', async () => {
    const token = await (async () => {
      const username = nextName('cors-user');
      await service.createUser(username, PASSWORD);
      return service.accessToken(username, PASSWORD);
    })();
    const answers = [
      await service.call('/mfa/', { token, headers: { origin: SPA } }),
      await service.call('/mfa/', {
        method: 'OPTIONS',
        headers: { origin: SPA, 'access-control-request-method': 'GET' },
      }),
      await service.call('/mfa/oauth2/authorize/', { headers: { origin: SPA } }),
      await service.call('/mfa/oauth2/sign-in/some-id/', { headers: { origin: SPA } }),
      await service.call('/admin/clients', { token: ADMIN_TOKEN, headers: { origin: SPA } }),
    ];
    for (const response of answers) {
      assert.equal(response.headers.get('access-control-allow-origin'), null, response.url);
      await response.body?.cancel();
    }
  });
});

describe('the kinds of app the browser flow serves', () => {
  test('a public native app (none, http://127.0.0.1/callback) signs in on any loopback port with openid-client and client.None()', async () => {
    const registered = await registerClient(service, {
      name: 'Desktop app',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1/callback'],
    });
    assert.equal(registered.client_secret, undefined);
    const username = nextName('native-user');
    const userId = await service.createUser(username, PASSWORD);
    const config = await configOf(issuer, registered, {}, client.None());
    const request = await authorizationRequest(config, {
      redirect_uri: 'http://127.0.0.1:53117/callback',
      scope: 'openid offline_access',
    });
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    assert.equal(`${back.origin}${back.pathname}`, 'http://127.0.0.1:53117/callback');
    const tokens = await exchange(config, back, request);
    assert.equal(tokens.claims()?.sub, userId);
    assert.equal(tokens.claims()?.aud, registered.client_id);
    // Rotation works for a public client too, without a secret.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '');
    assert.ok(refreshed.access_token);
  });

  test('a native app on a private-use scheme (com.example.app:/oauth) gets its code there, and its tokens', async () => {
    const redirect = 'com.example.app:/oauth';
    const registered = await registerClient(service, {
      name: 'Phone app',
      token_endpoint_auth_method: 'none',
      redirect_uris: [redirect],
    });
    const username = nextName('phone-user');
    await service.createUser(username, PASSWORD);
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config, { redirect_uri: redirect });
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    assert.ok(back.href.startsWith(`${redirect}?`), back.href);
    assert.equal(back.searchParams.get('iss'), issuer);
    assert.equal(back.searchParams.get('state'), request.state);
    const tokens = await exchange(config, back, request);
    assert.ok(tokens.access_token);
  });

  test('a confidential client registered with client_secret_post signs in with openid-client’s ClientSecretPost', async () => {
    const registered = await registerClient(service, { token_endpoint_auth_method: 'client_secret_post' });
    const username = nextName('post-user');
    const userId = await service.createUser(username, PASSWORD);
    const config = await configOf(issuer, registered, {}, client.ClientSecretPost());
    const request = await authorizationRequest(config);
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    const tokens = await exchange(config, back, request);
    assert.equal(tokens.claims()?.sub, userId);
    const info = await client.fetchUserInfo(config, tokens.access_token, userId);
    assert.equal(info.preferred_username, username);
  });

  test('a confidential client’s code is refused without its secret (invalid_client)', async () => {
    const registered = await registerClient(service);
    const username = nextName('secretless-user');
    await service.createUser(username, PASSWORD);
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config);
    const back = paramsOf(await signInWithPassword(new SignInBrowser(issuer), request.url, username));
    const answer = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'authorization_code',
          code: back.code,
          redirect_uri: CALLBACK,
          code_verifier: request.verifier,
          client_id: registered.client_id,
        },
      }),
      401,
    );
    assert.equal(answer.error, 'invalid_client');
  });
});
