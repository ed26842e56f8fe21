// The authorization endpoint's rules and the codes it gives (CONTRACT §18): what is shown to the
// browser and never redirected, what goes back to the app (always with state and iss, RFC 9207),
// and codes that are single use, short-lived and bound to their client, redirect URI and PKCE
// challenge (RFC 6749 §4.1, RFC 7636, RFC 9700).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import {
  type AuthorizationRequest,
  authorizationRequest,
  CALLBACK,
  configOf,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  paramsOf,
  type RegisteredClient,
  registerClient,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { expectStatus, type Service } from '../support/service.js';
import { SignInApi, SignInBrowser } from '../support/sign-in-browser.js';

let provider: Provider;
let service: Service;
let issuer: string;
let registered: RegisteredClient;
let config: client.Configuration;
let authorizePath: string;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  issuer = provider.issuer;
  registered = await registerClient(service, {
    redirect_uris: [CALLBACK, 'https://app.example.com/other-callback'],
    allowed_scopes: 'openid profile',
  });
  config = await configOf(issuer, registered);
  authorizePath = new URL(config.serverMetadata().authorization_endpoint ?? '').pathname;
});
after(() => provider.close());

/** The parameters of a valid request for `registered`, with `changes` (undefined: left out). */
function params(changes: Record<string, string | undefined> = {}): URLSearchParams {
  const all: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: registered.client_id,
    redirect_uri: CALLBACK,
    scope: 'openid',
    state: 'state-123',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    ...changes,
  };
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(all)) if (value !== undefined) search.append(name, value);
  return search;
}

/** GET the authorization endpoint with `search`, as a browser, without following the answer. */
function authorize(search: URLSearchParams) {
  return fetch(`${issuer}${authorizePath}?${search}`, { redirect: 'manual' });
}

/** Expects the 400 page: HTML that says what is wrong, and no redirect. */
async function expectPage(response: Response, says: RegExp) {
  const text = await response.text();
  assert.equal(response.status, 400, text);
  assert.equal(response.headers.get('location'), null, 'never a redirect');
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(text, says);
}

/** Expects a redirect back to the app with `error`, the request's state and the issuer. */
async function expectErrorBack(response: Response, error: string, state: string | null = 'state-123') {
  await response.body?.cancel();
  assert.equal(response.status, 303, `expected a redirect with ${error}`);
  const back = new URL(response.headers.get('location') ?? '');
  assert.equal(`${back.origin}${back.pathname}`, CALLBACK);
  const answer = paramsOf(back);
  assert.equal(answer.error, error, JSON.stringify(answer));
  assert.ok(answer.error_description, 'error_description says what is wrong');
  assert.equal(answer.iss, issuer, 'RFC 9207: iss on every authorization response');
  assert.equal(answer.state, state ?? undefined);
  assert.equal(answer.code, undefined);
  return answer;
}

describe('the authorization endpoint: what the browser is shown, never redirected', () => {
  test('an unknown client_id is a 400 page, even with a redirect_uri registered for another client', async () => {
    await expectPage(await authorize(params({ client_id: 'no-such-client' })), /no client is registered/);
    await expectPage(await authorize(params({ client_id: undefined })), /client_id is missing/);
  });

  test('a redirect_uri not registered for the client is a 400 page, however close to a registered one', async () => {
    for (const uri of [
      'https://evil.example.com/callback',
      'https://app.example.com/callback/',
      'https://app.example.com/callback?next=evil',
      'https://app.example.com:8443/callback',
      'http://app.example.com/callback',
      'https://APP.example.com/callback',
    ]) {
      await expectPage(await authorize(params({ redirect_uri: uri })), /redirect_uri is not one registered/);
    }
    // Several registered: the app must say which.
    await expectPage(await authorize(params({ redirect_uri: undefined })), /redirect_uri is missing/);
  });

  test('client_id or redirect_uri sent twice is a 400 page; a second state is not echoed to the app', async () => {
    const twiceClient = params();
    twiceClient.append('client_id', registered.client_id);
    await expectPage(await authorize(twiceClient), /client_id is given more than once/);
    const twiceRedirect = params();
    twiceRedirect.append('redirect_uri', 'https://evil.example.com/callback');
    await expectPage(await authorize(twiceRedirect), /redirect_uri is given more than once/);
    const twiceState = params();
    twiceState.append('state', 'another');
    await expectPage(await authorize(twiceState), /state is given more than once/);
  });
});

describe('the authorization endpoint: errors that go back to the app with error, state and iss', () => {
  test('no PKCE challenge, or the plain method, is invalid_request', async () => {
    await expectErrorBack(
      await authorize(params({ code_challenge: undefined, code_challenge_method: undefined })),
      'invalid_request',
    );
    await expectErrorBack(await authorize(params({ code_challenge: undefined })), 'invalid_request');
    await expectErrorBack(await authorize(params({ code_challenge_method: 'plain' })), 'invalid_request');
    await expectErrorBack(await authorize(params({ code_challenge_method: undefined })), 'invalid_request');
    await expectErrorBack(await authorize(params({ code_challenge: 'too-short' })), 'invalid_request');
  });

  test('a response_type other than code is unsupported_response_type', async () => {
    for (const responseType of ['token', 'id_token', 'code id_token', 'code token']) {
      await expectErrorBack(await authorize(params({ response_type: responseType })), 'unsupported_response_type');
    }
    await expectErrorBack(await authorize(params({ response_type: undefined })), 'unsupported_response_type');
  });

  test('a scope outside the client’s allowed_scopes is invalid_scope', async () => {
    const answer = await expectErrorBack(await authorize(params({ scope: 'openid offline_access' })), 'invalid_scope');
    assert.match(answer.error_description ?? '', /offline_access/);
    await expectErrorBack(await authorize(params({ scope: 'openid admin' })), 'invalid_scope');
  });

  test('prompt values: consent, select_account and none with another value are invalid_request', async () => {
    for (const prompt of ['consent', 'select_account', 'none login', 'bogus']) {
      await expectErrorBack(await authorize(params({ prompt })), 'invalid_request');
    }
  });

  test('a parameter sent twice (scope, code_challenge, prompt) is invalid_request', async () => {
    for (const [name, value] of [
      ['scope', 'openid'],
      ['code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
      ['prompt', 'login'],
      ['nonce', 'n'],
    ]) {
      const search = params(name === 'prompt' || name === 'nonce' ? { [name]: value } : {});
      search.append(name as string, value as string);
      const answer = await expectErrorBack(await authorize(search), 'invalid_request');
      assert.match(answer.error_description ?? '', new RegExp(`${name} is given more than once`));
    }
  });

  test('request and request_uri are refused with request_not_supported and request_uri_not_supported', async () => {
    await expectErrorBack(await authorize(params({ request: 'eyJhbGciOiJub25lIn0.e30.' })), 'request_not_supported');
    await expectErrorBack(
      await authorize(params({ request_uri: 'urn:ietf:params:oauth:request_uri:abc' })),
      'request_uri_not_supported',
    );
    await expectErrorBack(await authorize(params({ registration: '{}' })), 'registration_not_supported');
  });

  test('a response_mode other than query, a bad max_age, are invalid_request; without state the error comes back without one', async () => {
    await expectErrorBack(await authorize(params({ response_mode: 'fragment' })), 'invalid_request');
    await expectErrorBack(await authorize(params({ response_mode: 'form_post' })), 'invalid_request');
    await expectErrorBack(await authorize(params({ max_age: '-1' })), 'invalid_request');
    await expectErrorBack(await authorize(params({ max_age: 'soon' })), 'invalid_request');
    await expectErrorBack(
      await authorize(params({ state: undefined, response_type: 'token' })),
      'unsupported_response_type',
      null,
    );
  });

  test('prompt=none without a sign-in session is login_required', async () => {
    await expectErrorBack(await authorize(params({ prompt: 'none' })), 'login_required');
  });

  test('a POST form to the authorization endpoint is answered like a GET: the errors, and a sign-in that ends with a code', async () => {
    const post = (search: URLSearchParams) =>
      fetch(`${issuer}${authorizePath}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: search.toString(),
      });
    await expectErrorBack(await post(params({ code_challenge_method: 'plain' })), 'invalid_request');
    await expectPage(await post(params({ client_id: 'no-such-client' })), /no client is registered/);
    const twice = params();
    twice.append('scope', 'openid');
    await expectErrorBack(await post(twice), 'invalid_request');

    const username = nextName('post-form');
    await service.createUser(username, PASSWORD);
    const request = await authorizationRequest(config);
    const browser = new SignInBrowser(issuer);
    const opened = await browser.request(`${issuer}${authorizePath}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: request.url.searchParams.toString(),
    });
    assert.equal(opened.status, 200);
    assert.match(await opened.text(), /<base href="\.\.\/\.\.\/\.\.\/sign-in\/">/);
    const signIn = await SignInApi.handedOver(browser);
    const done = await signIn.password(username, PASSWORD);
    assert.ok((await exchange(config, done.location, request)).access_token);
  });
});

describe('a successful authorization response', () => {
  test('carries code, state and iss (RFC 9207) and nothing else', async () => {
    const username = nextName('success');
    await service.createUser(username, PASSWORD);
    const request = await authorizationRequest(config);
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    assert.equal(`${back.origin}${back.pathname}`, CALLBACK);
    assert.deepEqual(Object.keys(paramsOf(back)).sort(), ['code', 'iss', 'state']);
    assert.equal(back.searchParams.get('iss'), issuer);
    assert.equal(back.searchParams.get('state'), request.state);
  });

  test('a registered redirect URI’s own query is kept; a loopback redirect matches on any port but nothing else', async () => {
    const native = await registerClient(service, {
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1/callback', 'https://app.example.com/callback?tenant=7'],
    });
    const search = (redirect: string) =>
      new URLSearchParams({ ...Object.fromEntries(params()), client_id: native.client_id, redirect_uri: redirect });
    for (const wrong of [
      'http://127.0.0.1:53117/other',
      'http://127.0.0.2:53117/callback',
      'http://localhost:53117/callback',
      'https://127.0.0.1:53117/callback',
      'http://127.0.0.1:53117/callback?x=1',
    ]) {
      await expectPage(await authorize(search(wrong)), /redirect_uri is not one registered/);
    }
    const username = nextName('tenant');
    await service.createUser(username, PASSWORD);
    const nativeConfig = await configOf(issuer, native);
    const request = await authorizationRequest(nativeConfig, {
      redirect_uri: 'https://app.example.com/callback?tenant=7',
    });
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    assert.equal(back.searchParams.get('tenant'), '7');
    assert.ok(back.searchParams.get('code'));
    const loopback = await authorize(search('http://127.0.0.1:61000/callback'));
    assert.equal(loopback.status, 200, 'the sign-in page');
    assert.match(await loopback.text(), /<base href="\.\.\/\.\.\/\.\.\/sign-in\/">/);
  });
});

describe('authorization codes (RFC 6749 §4.1.2, RFC 7636)', () => {
  /** A signed-in user's code for `registered`, and the request it answers. */
  async function freshCode(): Promise<{ back: URL; request: AuthorizationRequest }> {
    const username = nextName('coder');
    await service.createUser(username, PASSWORD);
    const request = await authorizationRequest(config, { scope: 'openid profile' });
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, username);
    return { back, request };
  }

  /** POST the token endpoint with the authorization_code grant, as `who` (default: the client). */
  function redeem(
    code: string,
    fields: { redirect_uri?: string; code_verifier: string },
    who: RegisteredClient = registered,
  ) {
    return service.call('/mfa/oauth2/token/', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${who.client_id}:${who.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        ...fields,
      }).toString(),
    });
  }

  test('a code works once: a second exchange is invalid_grant and revokes what the first gave, refresh and access tokens', async () => {
    const { back, request } = await freshCode();
    const tokens = await exchange(config, back, request);
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200);

    const again = await expectStatus(
      redeem(back.searchParams.get('code') ?? '', { code_verifier: request.verifier }),
      400,
    );
    assert.equal(again.error, 'invalid_grant');
    const refresh = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: registered.client_id,
          client_secret: registered.client_secret,
        },
      }),
      400,
    );
    assert.equal(refresh.error, 'invalid_grant');
    assert.equal(
      (await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 401)).error,
      'invalid_token',
    );
  });

  test('openid-client sees a replayed code refused too', async () => {
    const { back, request } = await freshCode();
    await exchange(config, back, request);
    await assert.rejects(exchange(config, back, request), (error: any) => {
      assert.equal(error.error, 'invalid_grant');
      return true;
    });
  });

  test('a code lives 60 s: at 61 s it is invalid_grant', async () => {
    const { back, request } = await freshCode();
    service.clock.advance(61);
    const answer = await expectStatus(
      redeem(back.searchParams.get('code') ?? '', { code_verifier: request.verifier }),
      400,
    );
    assert.equal(answer.error, 'invalid_grant');
    assert.match(answer.error_description, /expired/);
  });

  test('a code is bound to its client: another client’s exchange is refused', async () => {
    const other = await registerClient(service);
    const { back, request } = await freshCode();
    const answer = await expectStatus(
      redeem(back.searchParams.get('code') ?? '', { code_verifier: request.verifier }, other),
      400,
    );
    assert.equal(answer.error, 'invalid_grant');
  });

  test('a code is bound to its redirect_uri: another registered one, or none, is refused', async () => {
    const { back, request } = await freshCode();
    const code = back.searchParams.get('code') ?? '';
    const other = await expectStatus(
      redeem(code, { code_verifier: request.verifier, redirect_uri: 'https://app.example.com/other-callback' }),
      400,
    );
    assert.equal(other.error, 'invalid_grant');
    const none = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: {
        grant_type: 'authorization_code',
        code,
        code_verifier: request.verifier,
        client_id: registered.client_id,
        client_secret: registered.client_secret,
      },
    });
    assert.equal(none.status, 400);
  });

  test('a code is bound to its PKCE challenge: a wrong verifier is refused and does not spend it; the right one still works', async () => {
    const { back, request } = await freshCode();
    const code = back.searchParams.get('code') ?? '';
    const wrong = await expectStatus(redeem(code, { code_verifier: client.randomPKCECodeVerifier() }), 400);
    assert.equal(wrong.error, 'invalid_grant');
    const missing = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'authorization_code',
          code,
          redirect_uri: CALLBACK,
          client_id: registered.client_id,
          client_secret: registered.client_secret,
        },
      }),
      400,
    );
    assert.equal(missing.error, 'invalid_request');
    const tokens = await exchange(config, back, request);
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200);
  });

  test('of 10 simultaneous exchanges of one code exactly one gets tokens, the others are invalid_grant, and the code used more than once revokes them', async () => {
    const { back, request } = await freshCode();
    const code = back.searchParams.get('code') ?? '';
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => redeem(code, { code_verifier: request.verifier })),
    );
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<Record<string, string>>));
    const statuses = responses.map((response) => response.status).sort();
    assert.deepEqual(statuses, [200, ...Array(9).fill(400)], JSON.stringify(bodies));
    for (const body of bodies) if (!body.access_token) assert.equal(body.error, 'invalid_grant');
    const winner = bodies.find((body) => body.access_token) ?? {};
    assert.equal(
      (await expectStatus(service.call('/mfa/', { token: winner.access_token }), 401)).error,
      'invalid_token',
    );
  });
});
