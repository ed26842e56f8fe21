// examples/spa/ in Debian's Chromium: the single-page app (oidc-client-ts, unmodified) on its own
// origin, the service on another, so that the token and userinfo calls are cross-origin and only
// the client's web_origins make them possible.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startSpa } from '../../examples/spa/serve.js';
import {
  button,
  newDesktopPage,
  nextTokenAnswer,
  recordProblems,
  SCRATCH_DIR,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { freePort } from '../support/free-port.js';
import { createTotpUser, PASSWORD } from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';

let stack: ServiceOnLocalhost;
let service: Service;
let spa: Awaited<ReturnType<typeof startSpa>>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let code: () => string;
const problems: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const registered = await expectStatus(
    service.call('/admin/clients', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: {
        name: 'Acme SPA',
        token_endpoint_auth_method: 'none',
        redirect_uris: [`${origin}/callback`, `${origin}/popup-callback`],
        post_logout_redirect_uris: [`${origin}/`],
        web_origins: [origin],
      },
    }),
    201,
  );
  assert.equal(registered.client_secret, undefined, 'a public client has no secret');
  spa = await startSpa({ issuer: stack.origin, clientId: registered.client_id, port });
  assert.equal(spa.origin, origin);

  code = (await createTotpUser(service, 'spa-sigrid')).currentCode;
  service.clock.advance(30); // the code that enrolled is never accepted again

  page = await newDesktopPage(browser);
  context = page.context();
  recordProblems(page, problems);
});

after(async () => {
  await browser?.close();
  await spa?.close();
  await stack?.close();
});

describe('examples/spa/, a single-page app signing in with oidc-client-ts', () => {
  let accessToken = '';

  test('Sign in goes to the hosted sign-in; password and authenticator app bring the person back, shown by name', async () => {
    await page.goto(`${spa.origin}/`);
    await button(page, 'Sign in').waitFor();
    await screenshots(page, 'example-spa-signed-out', SCRATCH_DIR);
    const authorizeRequest = page.waitForRequest((request) => request.url().includes('/mfa/oauth2/authorize/'));
    await button(page, 'Sign in').click();
    const authorization = new URL((await authorizeRequest).url());
    assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256', 'PKCE, the library’s default');
    assert.equal(authorization.searchParams.get('redirect_uri'), `${spa.origin}/callback`);
    await page.waitForURL((url) => url.origin === stack.origin && url.pathname === '/sign-in/');
    await page.getByText('Sign in to continue to Acme SPA.').waitFor();
    await page.getByLabel('Username').fill('spa-sigrid');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await page.getByLabel('Code from the app').fill(code());
    const tokenAnswer = nextTokenAnswer(page);
    const userinfoAnswer = page.waitForResponse((response) => response.url().endsWith('/mfa/oauth2/userinfo/'));
    await button(page, 'Verify').click();

    const tokens = await tokenAnswer;
    accessToken = tokens.access_token;
    assert.deepEqual(decodeJwt(tokens.id_token).amr, ['pwd', 'otp']);
    await page.getByText('Signed in as spa-sigrid').waitFor();
    assert.equal(page.url(), `${spa.origin}/`, 'the code and state are gone from the address bar');
    // The userinfo call succeeded from the app's origin: CORS let the browser read the answer.
    const userinfo = await userinfoAnswer;
    assert.equal(userinfo.status(), 200);
    assert.equal(userinfo.headers()['access-control-allow-origin'], spa.origin);
    assert.match((await page.locator('#userinfo').textContent()) ?? '', /"preferred_username":"spa-sigrid"/);
    await screenshots(page, 'example-spa-signed-in', SCRATCH_DIR);
  });

  test('a page on an origin no client registered cannot read the service’s answers, even with a valid token', async () => {
    const stranger = await context.newPage();
    try {
      // The same app on another origin (127.0.0.1 is not localhost to a browser).
      await stranger.goto(spa.origin.replace('localhost', '127.0.0.1'));
      const outcome = await stranger.evaluate(
        async ([url, token]) => {
          try {
            const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
            return `read ${response.status}`;
          } catch (error) {
            return `refused: ${(error as Error).message}`;
          }
        },
        [`${stack.origin}/mfa/oauth2/userinfo/`, accessToken] as const,
      );
      assert.equal(outcome, 'refused: Failed to fetch');
      // The service answered the request, but without allowing that origin.
      const direct = await service.call('/mfa/oauth2/userinfo/', {
        token: accessToken,
        headers: { origin: new URL(stranger.url()).origin },
      });
      assert.equal(direct.status, 200);
      assert.equal(direct.headers.get('access-control-allow-origin'), null);
    } finally {
      await stranger.close();
    }
  });

  test('Sign out ends the sign-in at the service and comes back; signing in again asks for the password', async () => {
    const endSessionRequest = page.waitForRequest((request) => request.url().includes('/mfa/oauth2/logout/'));
    await button(page, 'Sign out').click();
    const endSession = new URL((await endSessionRequest).url());
    assert.ok(endSession.searchParams.get('id_token_hint'), 'the ID token names the sign-in: no confirmation asked');
    assert.equal(endSession.searchParams.get('post_logout_redirect_uri'), `${spa.origin}/`);
    await page.waitForURL((url) => url.origin === spa.origin && url.pathname === '/');
    await button(page, 'Sign in').waitFor();
    assert.equal(page.url(), `${spa.origin}/`, 'the sign-out state is checked and cleared');
    assert.equal(await page.getByText('Signed in as').count(), 0);

    await button(page, 'Sign in').click();
    await page.getByLabel('Username').waitFor();
    assert.equal(new URL(page.url()).origin, stack.origin);
  });

  test('Sign in in a new window: the hosted sign-in in a popup, which hands the outcome to the app’s page (the page’s window keeps its opener)', async () => {
    await page.goto(`${spa.origin}/`);
    const opened = context.waitForEvent('page');
    await button(page, 'Sign in in a new window').click();
    const popup = await opened;
    await popup.getByText('Sign in to continue to Acme SPA.').waitFor();
    await popup.getByLabel('Username').fill('spa-sigrid');
    await popup.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(popup, 'Continue').click();
    service.clock.advance(30);
    await popup.getByLabel('Code from the app').fill(code());
    const closed = popup.waitForEvent('close');
    await button(popup, 'Verify').click();
    await closed;
    await page.getByText('Signed in as spa-sigrid').waitFor();
    assert.equal(page.url(), `${spa.origin}/`);
  });

  test('no CSP violation, console error or script error on the way', () => {
    assert.deepEqual(problems, []);
  });
});
