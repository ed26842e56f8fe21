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
import type { Service } from '../support/service.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';

// Email codes as a second factor (CONTRACT §20, EMAIL_FACTOR=on) on the account page in Chromium:
// added with a code read from the mail the test's SMTP server received, which turns two-step
// verification on and shows the backup codes at once; then asked for at the next sign-in, and a
// sign-in with a backup code saying how many are left.

const USERNAME = 'frank';
const EMAIL = 'frank@mail.example';
const PASSWORD = 'correct horse battery';

let smtp: SmtpTestServer;
let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
let backupCodes: string[] = [];
const pageErrors: string[] = [];

before(async () => {
  smtp = await startSmtpServer();
  ({ stack, service, browser } = await startServiceAndChromium({ env: { SMTP_URL: smtp.url, EMAIL_FACTOR: 'on' } }));
  await createMailUser(service, USERNAME, PASSWORD, { email: EMAIL });
  page = await newDesktopPage(browser);
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await smtp?.close();
});

const signIn = () => enterPassword(page, USERNAME, PASSWORD);

describe('email codes on the account page', () => {
  test('"Add codes by email" names the address, mails a code, and the code turns them on with backup codes', async () => {
    await page.goto(`${stack.origin}/account/`);
    await signIn();
    await page.getByText('Two-step verification is off').waitFor();
    await page.locator('#add-email-about', { hasText: `A code mailed to ${EMAIL}` }).waitFor();
    await button(page, 'Add codes by email').click();
    await page.locator('#email-verify-intro', { hasText: `We mailed a 6-digit code to ${EMAIL}` }).waitFor();
    await screenshots(page, 'add-email-codes');
    await page.locator('#email-code').fill(smtp.lastCodeFor(EMAIL));
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Codes by email added.');
    await page.getByText(`Codes by email to ${EMAIL}`).waitFor();
    await page.locator('#backup-codes li').nth(9).waitFor();
    backupCodes = (await page.locator('#backup-codes li').allTextContents()).map((code) => code.replace(/\s/g, ''));
    await button(page, 'I have saved them').click();
    assert.equal(await page.locator('#add-email').isHidden(), true, 'one email factor per account');
  });

  test('the next sign-in asks for a code by email; a new one can be asked for; the code signs in', async () => {
    await button(page, 'Sign out').click();
    await notice(page, 'status', 'You are signed out.');
    service.clock.advance(31);
    await signIn();
    await page.getByRole('heading', { name: 'Second step: a code by email' }).waitFor();
    await page.getByLabel('Code from the email').waitFor();
    await screenshots(page, 'email-second-step');
    const mailed = smtp.mailTo(EMAIL, /verification code is \d{6}/).length;
    await button(page, 'Send a new code').click();
    await notice(page, 'status', /If you asked moments ago, the code already sent still works/);
    assert.equal(smtp.mailTo(EMAIL, /verification code is \d{6}/).length, mailed, 'inside the cooldown no second mail');
    await page.getByLabel('Code from the email').fill(smtp.lastCodeFor(EMAIL));
    await page.keyboard.press('Enter');
    await page.getByText('Two-step verification is on').waitFor();
  });

  test('a sign-in with a backup code says how many are left', async () => {
    await button(page, 'Sign out').click();
    service.clock.advance(31);
    await signIn();
    await page.getByRole('heading', { name: 'Second step: a code by email' }).waitFor();
    await button(page, 'Use a backup code').click();
    await page.locator('#code').fill(backupCodes[0] ?? '');
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'You signed in with a backup code: 9 backup codes are left.');
    assert.deepEqual(pageErrors, []);
  });
});
