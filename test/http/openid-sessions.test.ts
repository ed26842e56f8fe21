// The browser's sign-in session at the OpenID Provider (CONTRACT §18): later requests answered
// without asking, unless prompt, max_age or acr_values ask for more; its ends (idle and absolute
// lifetimes, §14's changes to the user's factors, RP-initiated logout, the account page's sign-out);
// and its cookies.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import {
  authorizationRequest,
  CALLBACK,
  configOf,
  createTotpUser,
  exchange,
  expectStraightBack,
  nextName,
  PASSWORD,
  type Provider,
  paramsOf,
  registerClient,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { SignInApi, SignInBrowser } from '../support/sign-in-browser.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const SIGNED_OUT = 'https://app.example.com/signed-out';

let provider: Provider;
let service: Service;
let issuer: string;
let config: client.Configuration;
let otherConfig: client.Configuration;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  issuer = provider.issuer;
  config = await configOf(
    issuer,
    await registerClient(service, { name: 'Acme web', post_logout_redirect_uris: [SIGNED_OUT] }),
  );
  otherConfig = await configOf(issuer, await registerClient(service, { name: 'Acme reports' }));
});
after(() => provider.close());

/** A new user signed in at a new browser through `configuration`'s client: the browser, and the app's tokens. */
async function signedIn(configuration = config, prefix = 'session') {
  const username = nextName(prefix);
  const userId = await service.createUser(username, PASSWORD);
  const browser = new SignInBrowser(issuer);
  const request = await authorizationRequest(configuration, { scope: 'openid offline_access' });
  const tokens = await exchange(configuration, await signInWithPassword(browser, request.url, username), request);
  return { username, userId, browser, tokens };
}

/** Expects `url` to open the hosted sign-in at `step` (the session did not answer); answers the sign-in. */
async function expectAsked(browser: SignInBrowser, url: URL, step = 'password') {
  const signIn = await browser.startSignIn(url);
  assert.equal(signIn.opened.step, step);
  return signIn;
}

/** The refresh grant as `configuration`'s client: the status it answers. */
async function refreshStatus(configuration: client.Configuration, refreshToken: string | undefined) {
  return client.refreshTokenGrant(configuration, refreshToken ?? '').then(
    () => 200,
    (error: { status?: number; error?: string }) => {
      assert.equal(error.error, 'invalid_grant');
      return error.status;
    },
  );
}

describe('the sign-in session answers later requests without asking', () => {
  test('a second request from the same browser, for another client, gets a code at once; both ID tokens name one sid', async () => {
    const { userId, browser, tokens } = await signedIn();
    const request = await authorizationRequest(otherConfig);
    const back = await expectStraightBack(browser, request.url);
    assert.equal(back.searchParams.get('iss'), issuer);
    assert.equal(back.searchParams.get('state'), request.state);
    const second = await exchange(otherConfig, back, request);
    assert.equal(second.claims()?.sub, userId);
    assert.equal(second.claims()?.sid, tokens.claims()?.sid);
    assert.equal(second.claims()?.auth_time, tokens.claims()?.auth_time, 'the sign-in is the same one');
    assert.equal(second.claims()?.nonce, request.nonce);
  });

  test('prompt=login asks again, at the password step; the new sign-in replaces the session', async () => {
    const { username, browser, tokens } = await signedIn();
    service.clock.advance(5);
    const request = await authorizationRequest(config, { prompt: 'login' });
    const signIn = await expectAsked(browser, request.url);
    const done = await signIn.password(username, PASSWORD);
    const again = await exchange(config, done.location, request);
    assert.ok((again.claims()?.auth_time ?? 0) > (tokens.claims()?.auth_time ?? 0));
    assert.notEqual(again.claims()?.sid, tokens.claims()?.sid, 'a new sign-in, a new session');
  });

  test('max_age: within it the session answers; once exceeded the password is asked again; max_age=0 always asks', async () => {
    const { browser } = await signedIn();
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config, { max_age: '600' })).url));
    await expectAsked(browser, (await authorizationRequest(config, { max_age: '0' })).url);
    service.clock.advance(120);
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config, { max_age: '600' })).url));
    await expectAsked(browser, (await authorizationRequest(config, { max_age: '60' })).url);
  });

  test('acr_values=aal2 over a password-only session asks only what is missing: a user without a factor is taken to add one, not asked the password', async () => {
    const { username, browser } = await signedIn();
    const request = await authorizationRequest(config, { acr_values: 'aal2' });
    const signIn = await expectAsked(browser, request.url, 'enrol');
    assert.equal(signIn.opened.username, username);
    assert.ok(signIn.opened.factor_types.includes('totp'));
  });

  test('a password-only session does not satisfy a client with mfa_policy required: its sign-in opens at adding a factor', async () => {
    const { username, browser } = await signedIn();
    const strict = await configOf(issuer, await registerClient(service, { name: 'Strict', mfa_policy: 'required' }));
    const signIn = await expectAsked(browser, (await authorizationRequest(strict)).url, 'enrol');
    assert.equal(signIn.opened.username, username);
    const none = paramsOf(
      await expectStraightBack(browser, (await authorizationRequest(strict, { prompt: 'none' })).url),
    );
    assert.equal(none.error, 'interaction_required');
  });

  test('acr_values=phr over a session with an authenticator app asks only for the passkey: the sign-in opens at the second factor', async () => {
    const user = await createTotpUser(service, nextName('two-factors'));
    // The passkey is added with a fresh login that carried the authenticator app (CONTRACT §14).
    const token = await service.accessToken(user.username, PASSWORD, { mfa_code: user.code() });
    const { options } = await expectStatus(
      service.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
      200,
    );
    const authenticator = new SoftAuthenticator();
    await expectStatus(
      service.call('/mfa/webauthn/verify/', {
        method: 'PUT',
        token,
        body: { credential: authenticator.register(options, issuer) },
      }),
      200,
    );
    const browser = new SignInBrowser(issuer);
    const first = await authorizationRequest(config);
    const signIn = await browser.startSignIn(first.url);
    assert.equal((await signIn.password(user.username, PASSWORD)).mfa_type, 'totp');
    const done = await signIn.secondFactor({ mfa_type: 'totp', mfa_code: user.code() });
    assert.equal((await exchange(config, done.location, first)).claims()?.acr, 'aal2');

    // What the session proved is enough for aal2, and not asked again; phr asks the passkey alone.
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config, { acr_values: 'aal2' })).url));
    const none = paramsOf(
      await expectStraightBack(
        browser,
        (await authorizationRequest(config, { acr_values: 'phr', prompt: 'none' })).url,
      ),
    );
    assert.equal(none.error, 'interaction_required');
    const request = await authorizationRequest(config, { acr_values: 'phr' });
    const stepUp = await expectAsked(browser, request.url, 'second_factor');
    assert.equal(stepUp.opened.username, user.username);
    assert.equal(stepUp.opened.mfa_type, 'webauthn');
    const challenge = await stepUp.secondFactor({ mfa_type: 'webauthn' });
    const finished = await stepUp.secondFactor({ webauthn_response: authenticator.assert(challenge.webauthn, issuer) });
    const tokens = await exchange(config, finished.location, request);
    assert.equal(tokens.claims()?.acr, 'phr');
  });

  test('prompt=none: a code when the session suffices, login_required without one, interaction_required when it proves less', async () => {
    const { browser } = await signedIn();
    const quiet = await authorizationRequest(config, { prompt: 'none' });
    const tokens = await exchange(config, await expectStraightBack(browser, quiet.url), quiet);
    assert.ok(tokens.access_token);
    const stranger = new SignInBrowser(issuer);
    const noSession = paramsOf(
      await expectStraightBack(stranger, (await authorizationRequest(config, { prompt: 'none' })).url),
    );
    assert.equal(noSession.error, 'login_required');
    assert.equal(noSession.iss, issuer);
    const less = paramsOf(
      await expectStraightBack(
        browser,
        (await authorizationRequest(config, { prompt: 'none', acr_values: 'aal2' })).url,
      ),
    );
    assert.equal(less.error, 'interaction_required');
    assert.ok(less.state);
  });
});

describe('CONTRACT §14: a change to the user’s factors ends every sign-in session', () => {
  test('adding a factor (from another login) ends the session: the next request asks again', async () => {
    const { username, browser } = await signedIn();
    await createTotpFor(username);
    await expectAsked(browser, (await authorizationRequest(config)).url);
  });

  test('removing a factor ends the session', async () => {
    const user = await createTotpUser(service, nextName('removing'));
    const browser = new SignInBrowser(issuer);
    const request = await authorizationRequest(config);
    const signIn = await browser.startSignIn(request.url);
    await signIn.password(user.username, PASSWORD);
    await signIn.secondFactor({ mfa_code: user.code() });
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));
    const token = await service.accessToken(user.username, PASSWORD, { mfa_code: user.code() });
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    await expectStatus(service.call(`/mfa/factors/${factors[0].id}/`, { method: 'DELETE', token }), 204);
    await expectAsked(browser, (await authorizationRequest(config)).url);
  });

  test('an operator’s reset (DELETE /admin/users/{id}/mfa) ends the session and the tokens it gave', async () => {
    const user = await createTotpUser(service, nextName('reset'));
    const browser = new SignInBrowser(issuer);
    const request = await authorizationRequest(config);
    const signIn = await browser.startSignIn(request.url);
    await signIn.password(user.username, PASSWORD);
    const tokens = await exchange(config, (await signIn.secondFactor({ mfa_code: user.code() })).location, request);
    await expectStatus(service.call(`/admin/users/${user.userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
    await expectAsked(browser, (await authorizationRequest(config)).url);
    assert.equal(await refreshStatus(config, tokens.refresh_token), 400);
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 401);
  });

  async function createTotpFor(username: string) {
    const token = await service.accessToken(username, PASSWORD);
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    const mfa_code = app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code } }), 200);
  }
});

describe('RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0)', () => {
  test('with the session’s id_token_hint and a registered post_logout_redirect_uri: 303 there with state; the session and the tokens it gave are over', async () => {
    const { username, browser, tokens } = await signedIn();
    const otherLogin = await service.accessToken(username, PASSWORD);
    const logout = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token ?? '',
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'logout-state',
    });
    const response = await browser.request(logout);
    assert.equal(response.status, 303);
    const back = new URL(response.headers.get('location') ?? '');
    assert.equal(`${back.origin}${back.pathname}`, SIGNED_OUT);
    assert.equal(back.searchParams.get('state'), 'logout-state');
    assert.ok(
      response.headers.getSetCookie().some((cookie) => /^mfa-session=;/.test(cookie)),
      'the session cookie is cleared',
    );

    await expectAsked(browser, (await authorizationRequest(config)).url);
    assert.equal(await refreshStatus(config, tokens.refresh_token), 400);
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 401);
    // A login that did not come through the session goes on.
    await expectStatus(service.call('/mfa/', { token: otherLogin }), 200);
  });

  test('an unregistered post_logout_redirect_uri is a 400 page, never a redirect, and the session goes on', async () => {
    const { browser, tokens } = await signedIn();
    for (const uri of ['https://evil.example.com/', `${SIGNED_OUT}/`, CALLBACK]) {
      const response = await browser.request(
        client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: uri }),
      );
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('location'), null);
      assert.match(await response.text(), /post_logout_redirect_uri is not one registered/);
    }
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));
    assert.equal(await refreshStatus(config, tokens.refresh_token), 200);
  });

  test('an id_token_hint that is not this service’s is a 400 page', async () => {
    const { browser, tokens } = await signedIn();
    const [header, payload] = (tokens.id_token ?? '').split('.');
    const forged = `${header}.${payload}.${Buffer.from('not a signature').toString('base64url')}`;
    const response = await browser.request(`${issuer}/mfa/oauth2/logout/?id_token_hint=${forged}`);
    assert.equal(response.status, 400);
    await response.body?.cancel();
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));
  });

  test('without id_token_hint, or with one naming another session, a confirmation page asks first; posting its form ends the session', async () => {
    const { browser, tokens } = await signedIn();
    const someoneElse = await signedIn();
    for (const hint of [undefined, someoneElse.tokens.id_token]) {
      const page = await browser.request(
        client.buildEndSessionUrl(config, {
          ...(hint ? { id_token_hint: hint } : {}),
          post_logout_redirect_uri: SIGNED_OUT,
          state: 'confirm-state',
        }),
      );
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /<form method="post"/);
      assert.match(html, /<button type="submit">Sign out<\/button>/);
      // Only asked: both sessions go on.
      assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));
      assert.ok(await expectStraightBack(someoneElse.browser, (await authorizationRequest(config)).url));
    }

    const page = await (
      await browser.request(
        `${issuer}/mfa/oauth2/logout/?post_logout_redirect_uri=${encodeURIComponent(SIGNED_OUT)}&client_id=${config.clientMetadata().client_id}&state=s1`,
      )
    ).text();
    const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1] ?? '';
    assert.equal(action, `${issuer}/mfa/oauth2/logout/`);
    const fields = Object.fromEntries(
      [...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((match) => [match[1], match[2]]),
    );
    // Another site cannot post it: the confirmation is bound to this session.
    const forged = await browser.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, confirmation: 'guessed' }).toString(),
    });
    assert.equal(forged.status, 200);
    await forged.body?.cancel();
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));

    const confirmed = await browser.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer },
      body: new URLSearchParams(fields).toString(),
    });
    assert.equal(confirmed.status, 303);
    const back = new URL(confirmed.headers.get('location') ?? '');
    assert.equal(`${back.origin}${back.pathname}`, SIGNED_OUT);
    assert.equal(back.searchParams.get('state'), 's1');
    await expectAsked(browser, (await authorizationRequest(config)).url);
    assert.equal(await refreshStatus(config, tokens.refresh_token), 400);
    // The other person's session was never theirs to end.
    assert.ok(await expectStraightBack(someoneElse.browser, (await authorizationRequest(config)).url));
  });

  test('without a redirect, the signed-out page says so', async () => {
    const { browser, tokens } = await signedIn();
    const response = await browser.request(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' }));
    assert.equal(response.status, 200);
    assert.match(await response.text(), /You are signed out/);
    await expectAsked(browser, (await authorizationRequest(config)).url);
  });

  test('the account page’s sign-out (JSON, Origin the issuer) answers 204 and ends the session; from another origin 403, nothing ended', async () => {
    const { browser, tokens } = await signedIn();
    const post = (origin: string) =>
      browser.request(`${issuer}/mfa/oauth2/logout/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: '{}',
      });
    const refused = await post('https://evil.example.com');
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as { error: string }).error, 'csrf_check_failed');
    assert.ok(await expectStraightBack(browser, (await authorizationRequest(config)).url));

    const response = await post(issuer);
    assert.equal(response.status, 204);
    await expectAsked(browser, (await authorizationRequest(config)).url);
    assert.equal(await refreshStatus(config, tokens.refresh_token), 400);
  });
});

describe('the cookies', () => {
  /** The Set-Cookie attributes of cookie `name`, lower-cased, from `response`. */
  function cookieOf(response: Response, name: string) {
    const header = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
    assert.ok(header, `no ${name} cookie in ${response.headers.getSetCookie()}`);
    return header.split(';').map((part) => part.trim().toLowerCase());
  }

  test('on an http issuer: both cookies are HttpOnly, SameSite=Lax, Path=/', async () => {
    const username = nextName('cookies');
    await service.createUser(username, PASSWORD);
    const browser = new SignInBrowser(issuer);
    const opened = await browser.request((await authorizationRequest(config)).url);
    const binding = cookieOf(opened, 'mfa-browser');
    const signIn = await SignInApi.handedOver(browser);
    const finished = await signIn.send('POST', 'password', { username, password: PASSWORD });
    const session = cookieOf(finished, 'mfa-session');
    for (const cookie of [binding, session]) {
      assert.ok(cookie.includes('httponly'), cookie.join('; '));
      assert.ok(cookie.includes('samesite=lax'), cookie.join('; '));
      assert.ok(cookie.includes('path=/'), cookie.join('; '));
    }
    assert.ok(
      session.some((part) => part.startsWith('expires=')),
      'the session cookie ends with the session',
    );
  });

  test('the authorization endpoint answers with the page and hands it its description: a cookie of a minute the page’s script reads, holding the sign-in’s id and what GET …/sign-in/{id}/ answers', async () => {
    const browser = new SignInBrowser(issuer);
    const opened = await browser.request(
      (await authorizationRequest(config, { login_hint: 'hint-name', ui_locales: 'de' })).url,
    );
    assert.equal(opened.status, 200);
    assert.equal(opened.headers.get('cache-control'), 'no-store');
    // The page as /sign-in/ serves it, with a <base> naming that folder, which its policy alone allows.
    const page = await fetch(`${issuer}/sign-in/`);
    assert.equal(
      await opened.text(),
      (await page.text()).replace('<head>\n', '<head>\n    <base href="../../../sign-in/">\n'),
    );
    const pagePolicy = page.headers.get('content-security-policy') ?? '';
    assert.match(pagePolicy, /base-uri 'none'/);
    assert.equal(
      opened.headers.get('content-security-policy'),
      pagePolicy.replace("base-uri 'none'", "base-uri 'self'"),
    );
    const handed = cookieOf(opened, 'mfa-sign-in');
    assert.ok(!handed.includes('httponly'), 'the page’s script reads it');
    for (const flag of ['samesite=lax', 'path=/', 'max-age=60']) assert.ok(handed.includes(flag), handed.join('; '));
    const header = opened.headers.getSetCookie().find((cookie) => cookie.startsWith('mfa-sign-in=')) ?? '';
    const value = decodeURIComponent(header.slice('mfa-sign-in='.length).split(';')[0] ?? '');
    const id = value.slice(0, value.indexOf('.'));
    assert.match(id, /^[0-9a-f-]{36}$/, value);
    const described = JSON.parse(value.slice(id.length + 1));
    const signIn = new SignInApi(browser, id);
    assert.deepEqual(described, await signIn.open());
    assert.equal(described.step, 'password');
    assert.equal(described.login_hint, 'hint-name');
    assert.equal(described.language, 'de');
    // The token it holds is the one the steps take.
    signIn.csrfToken = described.csrf_token;
    const username = nextName('handed');
    await service.createUser(username, PASSWORD);
    const finished = await signIn.password(username, PASSWORD);
    assert.ok(finished.location, JSON.stringify(finished));
  });

  test('a description too long for a cookie is left out of it: the cookie names the sign-in alone, and the page asks for the rest', async () => {
    const longName = await configOf(issuer, await registerClient(service, { name: '😀'.repeat(200) }));
    const browser = new SignInBrowser(issuer);
    const opened = await browser.request(
      (await authorizationRequest(longName, { login_hint: '漢'.repeat(150), ui_locales: 'de' })).url,
    );
    assert.equal(opened.status, 200);
    const header = opened.headers.getSetCookie().find((cookie) => cookie.startsWith('mfa-sign-in=')) ?? '';
    const value = header.slice('mfa-sign-in='.length).split(';')[0] ?? '';
    assert.match(value, /^[0-9a-f-]{36}\.$/, 'the id alone');
    const signIn = await SignInApi.handedOver(browser);
    assert.equal(signIn.opened.client_name, '😀'.repeat(200));
    assert.equal(signIn.opened.login_hint, '漢'.repeat(150));
    const username = nextName('long-description');
    await service.createUser(username, PASSWORD);
    assert.ok((await signIn.password(username, PASSWORD)).location);
  });

  test('on an https issuer: Secure, with the __Host- prefix, HttpOnly, SameSite=Lax, Path=/', async () => {
    const secureIssuer = 'https://idp.example.com';
    const secure = await startService({ env: { ISSUER: secureIssuer } });
    try {
      const username = nextName('secure-cookies');
      await secure.createUser(username, PASSWORD);
      const registered = await expectStatus(
        secure.call('/admin/clients', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { name: 'Secure app', redirect_uris: [CALLBACK] },
        }),
        201,
      );
      const browser = new SignInBrowser(secureIssuer, secure.url);
      const url = new URL(`${secureIssuer}/mfa/oauth2/authorize/`);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: registered.client_id,
        redirect_uri: CALLBACK,
        scope: 'openid',
        state: 'secure-state',
        code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      }).toString();
      const opened = await browser.request(url);
      assert.equal(opened.status, 200, 'the sign-in page');
      const binding = cookieOf(opened, '__Host-mfa-browser');
      const handed = cookieOf(opened, '__Host-mfa-sign-in');
      for (const flag of ['secure', 'samesite=lax', 'path=/']) assert.ok(handed.includes(flag), handed.join('; '));
      const signIn = await browser.startSignIn(url);
      const finished = await signIn.send('POST', 'password', { username, password: PASSWORD });
      assert.equal(finished.status, 200);
      const session = cookieOf(finished, '__Host-mfa-session');
      for (const cookie of [binding, session]) {
        for (const flag of ['secure', 'httponly', 'samesite=lax', 'path=/']) {
          assert.ok(cookie.includes(flag), `${flag} missing: ${cookie.join('; ')}`);
        }
        assert.ok(!cookie.some((part) => part.startsWith('domain=')), '__Host- cookies name no domain');
      }
      // The session works under its prefixed name: the next request is answered at once.
      const next = new URL(url);
      next.searchParams.set('state', 'again');
      const back = await expectStraightBack(browser, next);
      assert.ok(back.searchParams.get('code'));
      assert.equal(back.searchParams.get('iss'), secureIssuer);
    } finally {
      await secure.close();
    }
  });
});

describe('SSO_SESSION_IDLE_TTL and SSO_SESSION_TTL', () => {
  let short: Provider;
  let shortConfig: client.Configuration;

  before(async () => {
    short = await startProvider({ env: { SSO_SESSION_IDLE_TTL: '120', SSO_SESSION_TTL: '400' } });
    shortConfig = await configOf(short.issuer, await registerClient(short.service));
  });
  after(() => short.close());

  async function shortSignIn() {
    const username = nextName('short');
    await short.service.createUser(username, PASSWORD);
    const browser = new SignInBrowser(short.issuer);
    await signInWithPassword(browser, (await authorizationRequest(shortConfig)).url, username);
    return browser;
  }

  test('a session used within SSO_SESSION_IDLE_TTL goes on; one left unused longer is over', async () => {
    const browser = await shortSignIn();
    for (let use = 0; use < 2; use += 1) {
      short.service.clock.advance(100);
      assert.ok(await expectStraightBack(browser, (await authorizationRequest(shortConfig)).url), `use ${use}`);
    }
    // 321 s after the sign-in (within SSO_SESSION_TTL), 121 s after its last use.
    short.service.clock.advance(121);
    await expectAsked(browser, (await authorizationRequest(shortConfig)).url);
  });

  test('however often it is used, a session ends SSO_SESSION_TTL after the sign-in', async () => {
    const browser = await shortSignIn();
    for (let use = 0; use < 3; use += 1) {
      short.service.clock.advance(100);
      assert.ok(await expectStraightBack(browser, (await authorizationRequest(shortConfig)).url), `use ${use}`);
    }
    // 401 s after the sign-in, 101 s after its last use (within SSO_SESSION_IDLE_TTL).
    short.service.clock.advance(101);
    await expectAsked(browser, (await authorizationRequest(shortConfig)).url);
  });
});
