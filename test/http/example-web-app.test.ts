// examples/web-app.ts against the real service: the app is unmodified openid-client behind node:http;
// the browser is two cookie jars, one per host, as a browser keeps them (SignInBrowser's request()
// for each): the app's session cookie and the service's sign-in cookies never meet.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { createWebApp } from '../../examples/web-app.js';
import { freePort } from '../support/free-port.js';
import { startServiceAtIssuer } from '../support/issuer.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';

const PASSWORD = 'correct horse battery';

let stack: Awaited<ReturnType<typeof startServiceAtIssuer>>;
let service: Service;
let webApp: ReturnType<typeof createWebApp>;
/** The app's origin, http://127.0.0.1:<port>. */
let app: string;

before(async () => {
  stack = await startServiceAtIssuer();
  service = stack.service;
  app = `http://127.0.0.1:${await freePort()}`;
  const registered = await expectStatus(
    service.call('/admin/clients', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: { name: 'Acme web', redirect_uris: [`${app}/callback`], post_logout_redirect_uris: [`${app}/`] },
    }),
    201,
  );
  webApp = createWebApp({
    issuer: stack.origin,
    clientId: registered.client_id,
    clientSecret: registered.client_secret,
    redirectUri: `${app}/callback`,
    postLogoutRedirectUri: `${app}/`,
  });
  await new Promise<void>((resolve) => webApp.listen(Number(new URL(app).port), '127.0.0.1', resolve));
});
after(async () => {
  webApp.close();
  await stack.close();
});

/** A user with an authenticator app; answers a function giving the app's current code. */
async function createTotpUser(username: string): Promise<() => string> {
  await service.createUser(username, PASSWORD);
  const token = await service.accessToken(username, PASSWORD);
  const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
  const authenticator = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
  const code = () => authenticator.generate({ timestamp: service.clock.now().getTime() });
  await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code() } }), 200);
  service.clock.advance(30); // the code that enrolled is never accepted again
  return code;
}

async function pageText(browser: SignInBrowser, path: string): Promise<string> {
  const response = await browser.request(app + path);
  assert.equal(response.status, 200);
  return response.text();
}

/** GET /login on the app: where it sends the browser. */
async function startLogin(browser: SignInBrowser): Promise<URL> {
  const response = await browser.request(`${app}/login`);
  assert.equal(response.status, 303);
  return new URL(response.headers.get('location') ?? '');
}

/** A browser (one jar per host) signed in to the app as a user with an authenticator app. */
async function signInWithApp(username: string, code: () => string) {
  const atApp = new SignInBrowser(app);
  const atService = new SignInBrowser(stack.origin);
  const signIn = await atService.startSignIn(await startLogin(atApp));
  assert.equal(signIn.opened.client_name, 'Acme web');
  assert.equal((await signIn.password(username, PASSWORD)).mfa_type, 'totp');
  const done = await signIn.secondFactor({ mfa_code: code() });
  const back = new URL(done.location);
  assert.equal(`${back.origin}${back.pathname}`, `${app}/callback`);
  const landed = await atApp.request(back);
  assert.equal(landed.status, 303, await landed.text());
  assert.equal(landed.headers.get('location'), '/');
  return { atApp, atService };
}

describe('examples/web-app.ts, a server-rendered app signing in with openid-client', () => {
  test('/login sends the browser to the authorization endpoint with PKCE S256, state and nonce, keyed by an HttpOnly cookie', async () => {
    const atApp = new SignInBrowser(app);
    assert.match(await pageText(atApp, '/'), /<a href="\/login">Sign in<\/a>/);
    const response = await atApp.request(`${app}/login`);
    const location = new URL(response.headers.get('location') ?? '');
    assert.equal(`${location.origin}${location.pathname}`, `${stack.origin}/mfa/oauth2/authorize/`);
    assert.equal(location.searchParams.get('response_type'), 'code');
    assert.equal(location.searchParams.get('redirect_uri'), `${app}/callback`);
    assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
    for (const name of ['code_challenge', 'state', 'nonce']) assert.ok(location.searchParams.get(name), name);
    assert.match(
      response.headers.getSetCookie()[0] ?? '',
      /^webapp_session=[\w-]{43}; HttpOnly; SameSite=Lax; Path=\/$/,
    );
  });

  test('a user with an authenticator app signs in; the app shows the name from userinfo and the ID token’s amr and acr', async () => {
    const code = await createTotpUser('web-app-tove');
    const { atApp } = await signInWithApp('web-app-tove', code);
    const home = await pageText(atApp, '/');
    assert.match(home, /Signed in as web-app-tove/);
    assert.match(home, /amr pwd otp, acr aal2/);
  });

  test('a code meant for another browser’s sign-in is refused by the app (state)', async () => {
    const code = await createTotpUser('web-app-uma');
    const victim = new SignInBrowser(app);
    await startLogin(victim);
    // The attacker signs in and hands the victim the redirect back meant for the attacker's own sign-in.
    const attacker = new SignInBrowser(app);
    const signIn = await new SignInBrowser(stack.origin).startSignIn(await startLogin(attacker));
    await signIn.password('web-app-uma', PASSWORD);
    const done = await signIn.secondFactor({ mfa_code: code() });
    const refused = await victim.request(done.location);
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /Sign-in failed: .*state/);
    assert.match(await pageText(victim, '/'), /You are not signed in/);
  });

  test('signing out goes through the end-session endpoint, ends the service’s sign-in too, and comes back', async () => {
    const code = await createTotpUser('web-app-vera');
    const { atApp, atService } = await signInWithApp('web-app-vera', code);
    const out = await atApp.request(`${app}/logout`, { method: 'POST' });
    assert.equal(out.status, 303);
    const endSession = new URL(out.headers.get('location') ?? '');
    assert.equal(`${endSession.origin}${endSession.pathname}`, `${stack.origin}/mfa/oauth2/logout/`);
    assert.ok(endSession.searchParams.get('id_token_hint'));
    assert.equal(endSession.searchParams.get('post_logout_redirect_uri'), `${app}/`);

    const ended = await atService.request(endSession);
    assert.equal(ended.status, 303, 'the hint names the session: no confirmation is asked');
    assert.equal(ended.headers.get('location'), `${app}/`);
    assert.match(await pageText(atApp, '/'), /You are not signed in/);
    // The service's sign-in session ended with it: signing in again asks for the password.
    const again = await atService.authorize(await startLogin(atApp));
    assert.ok('signIn' in again, 'the service still had a sign-in session');
  });
});
