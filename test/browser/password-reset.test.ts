import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  button,
  enterPassword,
  newDesktopPage,
  notice,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { createMailUser } from '../support/mail-users.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service } from '../support/service.js';
import { type ReceivedMail, type SmtpTestServer, startSmtpServer, textOf } from '../support/smtp-server.js';

// "Forgot password?" (CONTRACT §20) in Chromium: asked for on the account page's sign-in and on
// the hosted sign-in, the link read from the mail the test's SMTP server received, the new password
// set on /account/reset/, and the next sign-in still asking for the second factor.

const USERNAME = 'erin';
const EMAIL = 'erin@mail.example';
const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'violet tugboat lantern';

let smtp: SmtpTestServer;
let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  smtp = await startSmtpServer();
  ({ stack, service, browser } = await startServiceAndChromium({ env: { SMTP_URL: smtp.url } }));
  await createMailUser(service, USERNAME, PASSWORD, { email: EMAIL });
  await service.enrolSms(await service.accessToken(USERNAME, PASSWORD), nextPhone());
  page = await newDesktopPage(browser);
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await smtp?.close();
});

const LINK_ASKED =
  /If an account matches and has a verified email address, a link to choose a new password is on its way/;

/** The link of the newest reset mail to EMAIL, once the `count`th has arrived. */
async function mailedLink(count: number): Promise<string> {
  const resetMails = () => smtp.mailTo(EMAIL, /\/account\/reset\/\?token=/);
  for (let tries = 0; resetMails().length < count; tries += 1) {
    if (tries > 1000) throw new Error('no reset mail arrived');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const link = /http:\/\/localhost:\d+\/account\/reset\/\?token=[\w-]+/.exec(
    textOf(resetMails().at(-1) as ReceivedMail),
  )?.[0];
  assert.ok(link, 'the mail holds the reset link');
  return link;
}

describe('forgot password, in the browser', () => {
  test('the account page: "Forgot password?" asks for the name and says what happens next', async () => {
    await page.goto(`${stack.origin}/account/`);
    await page.locator('#username').fill(USERNAME);
    await button(page, 'Forgot password?').click();
    await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
    assert.equal(await page.locator('#forgot-name').inputValue(), USERNAME, 'the username typed is kept');
    assert.equal(await page.evaluate<string>('document.activeElement?.id'), 'forgot-name');
    await button(page, 'Email me a link').click();
    await notice(page, 'status', LINK_ASKED);
    await screenshots(page, 'forgot-password');
    // The same words for a name no account has.
    await page.locator('#forgot-name').fill('nobody-at-all');
    await button(page, 'Email me a link').click();
    // The words still show from the first request: this one's answer is awaited (the form is busy
    // until then, its focus on <body>, where Escape would not reach the form).
    await page.locator('form[aria-busy]').waitFor({ state: 'detached' });
    await notice(page, 'status', LINK_ASKED);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Continue' }).waitFor();
    assert.equal(await page.evaluate<string>('document.activeElement?.id'), 'forgot-open', 'Escape goes back');
  });

  test('the link opens /account/reset/: a weak password is refused, a good one is set, no one is signed in', async () => {
    const link = await mailedLink(1);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    assert.equal(new URL(page.url()).search, '', 'the token leaves the address bar');
    await screenshots(page, 'reset-password');
    await page.getByLabel('New password', { exact: true }).fill('password123');
    await button(page, 'Set new password').click();
    await page.locator('.notice.notice-error', { hasText: /common/i }).waitFor();
    assert.equal(await page.getByLabel('New password', { exact: true }).getAttribute('aria-invalid'), 'true');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await button(page, 'Set new password').click();
    await page.getByRole('heading', { name: 'Your password is changed' }).waitFor();
    await screenshots(page, 'reset-done');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await enterPassword(page, USERNAME, NEW_PASSWORD);
    await page.getByRole('heading', { name: 'Second step: a code by SMS' }).waitFor();
  });

  test('a link used once says so, and where to ask for a new one', async () => {
    await page.goto(await mailedLink(1));
    await page.getByLabel('New password', { exact: true }).fill(`${NEW_PASSWORD} again`);
    await button(page, 'Set new password').click();
    await page.locator('.notice.notice-error', { hasText: 'This link was already used' }).waitFor();
  });

  test('the hosted sign-in offers "Forgot password?" too', async () => {
    const client = await expectStatus(
      service.call('/admin/clients', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { name: 'Acme', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none' },
      }),
      201,
    );
    const authorize = new URL(`${stack.origin}/mfa/oauth2/authorize/`);
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: 'http://127.0.0.1/callback',
      scope: 'openid',
      state: 'state-1',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    })) {
      authorize.searchParams.set(name, value);
    }
    await page.goto(authorize.href);
    await page.getByRole('heading', { name: /Sign in/ }).waitFor();
    await button(page, 'Forgot password?').click();
    await page.locator('#forgot-name').fill(EMAIL);
    await button(page, 'Email me a link').click();
    await notice(page, 'status', LINK_ASKED);
    await mailedLink(2);
    await screenshots(page, 'hosted-forgot-password');
    assert.deepEqual(pageErrors, []);
  });
});
