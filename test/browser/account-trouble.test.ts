import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type { Browser, Page } from 'playwright-core';
import {
  button,
  enterPassword,
  newDesktopPage,
  nextTokenAnswer,
  notice,
  SCRATCH_DIR,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { nextPhone, type Service } from '../support/service.js';

// The account page in Chromium when something outside it fails: the SMS provider at sign-in, the
// service while a token is refreshed. One person, SMS as the default factor, with backup codes;
// each test goes on from where the one before left the page.

const USERNAME = 'carol';
const PASSWORD = 'correct horse battery';

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
let backupCodes: string[];
const phone = nextPhone();
const pageErrors: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium({
    // A silent provider is given up on after 1 s rather than the default, so the test stays short.
    adjust: (config) =>
      config.sms.kind === 'twilio' ? { ...config, sms: { ...config.sms, timeoutMs: 1000 } } : config,
  }));
  const { token } = await service.createUserWithMfa(USERNAME, PASSWORD, phone);
  const created = await service.call('/mfa/recovery/', { method: 'POST', token });
  assert.equal(created.status, 200);
  backupCodes = ((await created.json()) as { backup_codes: string[] }).backup_codes;
  page = await newDesktopPage(browser);
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
  await stack?.close();
});

const signIn = () => enterPassword(page, USERNAME, PASSWORD);

/** Answers the page's refresh requests with `status` and `body` until `unroute`. */
async function answerRefreshesWith(status: number, body: object, headers: Record<string, string> = {}) {
  await page.route('**/mfa/oauth2/token/', (route) =>
    (route.request().postData() ?? '').includes('refresh_token')
      ? route.fulfill({ status, headers, contentType: 'application/json', body: JSON.stringify(body) })
      : route.continue(),
  );
}

async function renameTo(name: string) {
  await page.locator('#factor-list li input').first().fill(name);
  await page.locator('#factor-list li input').first().press('Enter');
}

describe('the account page when the SMS provider or the service is in trouble', () => {
  test('the SMS provider fails at sign-in: the second step opens anyway, and a backup code signs in', async () => {
    service.twilio.behave('fail');
    await page.goto(`${stack.origin}/account/`);
    await signIn();
    await page.getByRole('heading', { name: 'Second step: a code by SMS' }).waitFor();
    await notice(page, 'alert', 'The SMS could not be sent: the provider failed.');
    assert.equal(await page.locator('#code:focus').count(), 1, 'focus is in the code field');
    await button(page, 'Send a new code').waitFor();
    await button(page, 'Use a backup code').waitFor();
    await screenshots(page, 'sms-failed-at-sign-in', SCRATCH_DIR);

    // Offered because the service could not say which factors carol has: it says so when asked.
    await button(page, 'Use your authenticator app').click();
    await page.keyboard.type('123456');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'Your account has no authenticator app. Choose another way to verify.');

    await button(page, 'Use a backup code').click();
    const tokens = nextTokenAnswer(page);
    await page.keyboard.type(backupCodes[0] ?? '');
    await page.keyboard.press('Enter');
    assert.deepEqual(decodeJwt((await tokens).access_token).amr, ['pwd', 'backup']);
    await page.locator('#account-title').waitFor();
  });

  test('the SMS provider is silent at sign-in: the code that arrives late still signs in', async () => {
    service.twilio.behave('hang');
    await button(page, 'Sign out').click();
    await signIn();
    await notice(page, 'alert', 'The code may still arrive');
    await page.getByRole('heading', { name: 'Second step: a code by SMS' }).waitFor();
    await screenshots(page, 'sms-timeout-at-sign-in', SCRATCH_DIR);
    service.twilio.behave('deliver');

    const tokens = nextTokenAnswer(page);
    await page.locator('#code').fill(service.twilio.lastCodeFor(`+${phone}`));
    await page.keyboard.press('Enter');
    assert.deepEqual(decodeJwt((await tokens).access_token).amr, ['pwd', 'sms']);
    // The list is drawn once both reads (factors, backup codes) are answered: none is left in flight.
    await page.locator('#factor-list .factor-name').waitFor();
  });

  test('a refresh answered 503 keeps the login: the page says when to try again, and the next try works', async () => {
    service.clock.advance(901); // the access token has expired
    await answerRefreshesWith(
      503,
      { error: 'database_unavailable', error_description: 'the database is not answering' },
      { 'retry-after': '5' },
    );
    await button(page, /^Rename/).click();
    await renameTo('Phone');
    await notice(page, 'alert', 'The service is having trouble right now. Try again in 5 seconds.');
    assert.equal(await page.locator('#account').isVisible(), true, 'the account stays on screen');
    assert.equal(await page.locator('#sign-in').isHidden(), true);
    await screenshots(page, 'refresh-503', SCRATCH_DIR);

    await page.unroute('**/mfa/oauth2/token/');
    await renameTo('Phone');
    await notice(page, 'status', 'Renamed to “Phone”');
  });

  test('a refresh token the service refuses ends the session on the page', async () => {
    service.clock.advance(901);
    await answerRefreshesWith(400, { error: 'invalid_grant', error_description: 'the refresh token is revoked' });
    await button(page, /^Rename/).click();
    await renameTo('Old phone');
    await notice(page, 'alert', 'Your session has ended. Sign in again.');
    await page.locator('#sign-in-title').waitFor();
    await page.unroute('**/mfa/oauth2/token/');
  });

  test('no script error on the way', () => {
    assert.deepEqual(pageErrors, []);
  });
});

describe('the account page opened at an IP address', () => {
  test('adding a passkey there says why the browser refused and links the same page at localhost', async () => {
    await service.createUser('dave', PASSWORD);
    const atAddress = await newDesktopPage(browser);
    const ipOrigin = stack.origin.replace('localhost', '127.0.0.1');
    await atAddress.goto(`${ipOrigin}/account/`);
    await enterPassword(atAddress, 'dave', PASSWORD);
    await button(atAddress, 'Add a passkey').click();
    await atAddress.locator('#passkey-name').fill('Laptop');
    await atAddress.locator('#passkey-name').press('Enter');
    await notice(
      atAddress,
      'alert',
      `they need a domain name, not an IP address, and HTTPS anywhere but localhost. Open this page at ${stack.origin}/account/ instead.`,
    );
    assert.doesNotMatch((await atAddress.getByRole('alert').first().textContent()) ?? '', /ISSUER/);
    await atAddress.context().close();
  });
});
