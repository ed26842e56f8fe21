import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { generate } from 'lean-qr';
import { toSvgPath } from 'lean-qr/extras/svg';
import * as OTPAuth from 'otpauth';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { otpauthUri } from '../../src/mfa/factors/totp.js';
import {
  addVirtualAuthenticator,
  button,
  newDesktopPage,
  nextTokenAnswer,
  notice,
  recordProblems,
  SCRATCH_DIR,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { nextPhone, type Service } from '../support/service.js';

// The account page in Debian's Chromium, as a person uses it: one person's whole journey, step by
// step (each test goes on from where the one before left the page). Passkeys are made and used by
// Chromium's virtual authenticator (CDP WebAuthn domain); authenticator-app codes are computed from
// the key the page shows; SMS codes come from the fake Twilio.

const USERNAME = 'alice';
const PASSWORD = 'correct horse battery';
/** As long as a factor name may be, with no space to break the line at. */
const LONG_NAME = 'YubiKey5CNFC_work_backup_serial_0123456789_ABCDEFGHIJKLMNOPQRSTU';

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
/** Console errors and page errors other than the API's expected 4xx answers. */
const problems: string[] = [];
/** Every request the page made, as `METHOD /path`. */
const requested: string[] = [];
let totp: OTPAuth.TOTP;
const smsPhone = nextPhone();
/** "+1 415 200 0101", as the page groups the number's digits. */
const smsPhoneShown = `+${smsPhone.slice(0, 1)} ${smsPhone.slice(1, 4)} ${smsPhone.slice(4, 7)} ${smsPhone.slice(7)}`;
/** The calls for the backup codes' count: none is made for a user without two-step verification. */
const recoveryReads: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  await service.createUser(USERNAME, PASSWORD);
  page = await newDesktopPage(browser, { acceptDownloads: true });
  context = page.context();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.origin });
  page.on('request', (request) => {
    if (request.method() === 'GET' && new URL(request.url()).pathname === '/mfa/recovery/') {
      recoveryReads.push(request.url());
    }
  });
  // The API's refusals (a wrong code, a step-up) are part of the flow.
  recordProblems(page, problems, { origin: stack.origin, path: '/mfa/' });
  page.on('request', (request) => requested.push(`${request.method()} ${new URL(request.url()).pathname}`));
  // A security key: its passkeys are second factors. Signing in with a passkey alone has its test.
  ({ cdp, authenticatorId } = await addVirtualAuthenticator(page, false));
});

after(async () => {
  await browser?.close();
  await stack?.close();
});

function factorItem(name: string) {
  return page.locator('#factor-list > li', { has: page.locator('.factor-name', { hasText: name }) });
}

/** The id of the focused element. */
function focusedId(): Promise<string> {
  return page.evaluate<string>('document.activeElement?.id ?? ""');
}

/** Waits until the element with this id has the focus (the page moves it after an answer arrives). */
async function focusMovesTo(id: string) {
  // A locator, not waitForFunction: the page's CSP forbids the eval that one needs.
  await page.locator(`#${id}:focus`).waitFor();
}

/** The authenticator app's code at the service's now (the test clock). */
function appCode(): string {
  return totp.generate({ timestamp: service.clock.now().getTime() });
}

/**
 * A full-page screenshot at desktop and phone widths, into docs/screenshots/ (the README links
 * them) unless another `dir` is given; at 375 px nothing may be wider than the screen.
 */
/** WCAG 2.x contrast ratio of two `rgb(r, g, b)` colours. */
function contrast(one: string, other: string): number {
  const luminance = (colour: string) => {
    const [r = 0, g = 0, b = 0] = (colour.match(/\d+/g) ?? []).map((part) => {
      const channel = Number(part) / 255;
      return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [light, dark] = [luminance(one), luminance(other)].sort((a, b) => b - a);
  return ((light ?? 0) + 0.05) / ((dark ?? 0) + 0.05);
}

describe('the account page in Chromium (CONTRACT §17)', () => {
  test('signing in with the keyboard alone: focus starts in the username, Tab moves on visibly, Enter submits', async () => {
    const response = await page.goto(`${stack.origin}/account/`);
    assert.match((await response?.allHeaders())?.['content-security-policy'] ?? '', /default-src 'self'/);
    await page.locator('#sign-in-title').waitFor();
    assert.equal(await focusedId(), 'username');
    await screenshots(page, 'sign-in');

    await page.keyboard.type(USERNAME);
    await page.keyboard.press('Tab');
    assert.equal(await focusedId(), 'password');
    const outline = await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle');
    assert.notEqual(outline, 'none', 'the focused field shows it');
    // WCAG 1.4.11: the ring stands out 3:1 from the panel (white) and the page around it.
    const ring = await page.evaluate<string>('getComputedStyle(document.activeElement).outlineColor');
    for (const around of [
      'rgb(255, 255, 255)',
      await page.evaluate<string>('getComputedStyle(document.body).backgroundColor'),
    ]) {
      assert.ok(contrast(ring, around) >= 3, `focus ring ${ring} on ${around}: ${contrast(ring, around).toFixed(2)}:1`);
    }
    await page.keyboard.type('wrong password');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'The username or password is wrong.');
    assert.equal(await focusedId(), 'password', 'focus stays on the password to try again');

    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<string>('document.activeElement?.textContent ?? ""'), 'Continue');
    await page.keyboard.press('Enter');
    await focusMovesTo('account-title');
    await page.getByText('Two-step verification is off').waitFor();
    assert.equal(await page.locator('#who-name').textContent(), USERNAME);
    // One vocabulary: the page is "Account security", this view "Sign-in security", the concept
    // "two-step verification", the factors "ways to verify".
    assert.equal(await page.title(), 'Sign-in security · Account security');
    assert.equal(await page.locator('.brand').textContent(), 'Account security');
    await page.getByRole('heading', { name: 'Your ways to verify' }).waitFor();
    await page.getByRole('heading', { name: 'Add a way to verify' }).waitFor();
    assert.doesNotMatch(await page.locator('body').innerText(), /second factor/i);
    // Without a way to verify there are no backup codes: the page does not ask how many are left.
    assert.deepEqual(recoveryReads, []);
    await page.getByText('Backup codes come with two-step verification').waitFor();
  });

  test('the tokens are held in memory only: no storage, no cookies', async () => {
    assert.equal(await page.evaluate<number>('localStorage.length + sessionStorage.length'), 0);
    assert.deepEqual(await context.cookies(), []);
  });

  test('no request the page knows will fail: no backup-code count for a user without a factor', () => {
    assert.ok(requested.includes('GET /mfa/factors/'), requested.join(', '));
    assert.ok(!requested.includes('GET /mfa/recovery/'), requested.join(', '));
  });

  test('adding an authenticator app shows the key as a QR code and as text; a code computed from it turns MFA on', async () => {
    // The sign-in is now older than STEP_UP_MAX_AGE: turning MFA on asks for the password again
    // (CONTRACT §14), then goes on with the change.
    service.clock.advance(601);
    // Each way to add says what it is; the recommendation is a passkey, or an app over SMS.
    for (const [id, about] of [
      ['add-passkey', /^Recommended:/],
      ['add-totp', /Safer than SMS/],
      ['add-sms', /prefer a passkey or an app/],
    ] as const) {
      const describedBy = (await page.locator(`#${id}`).getAttribute('aria-describedby')) ?? '';
      assert.match((await page.locator(`[id="${describedBy}"]`).textContent()) ?? '', about);
    }
    await button(page, 'Add an authenticator app').click();
    assert.equal(await focusedId(), 'totp-name');
    await page.locator('#totp-name').fill('Phone');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByText('This change needs a recent sign-in. Enter your password again.').waitFor();
    assert.equal(await focusedId(), 'password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.locator('#totp-qr svg').waitFor();
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    assert.match(secret, /^[A-Z2-7]{32}$/);
    // The QR code holds the otpauth URI for this key: the same modules lean-qr draws for it here.
    const drawn = await page.locator('#totp-qr svg path').getAttribute('d');
    assert.equal(drawn, toSvgPath(generate(otpauthUri('MFA', USERNAME, secret))));
    // On a phone, the app on that phone takes the key from a link; elsewhere it is copied.
    assert.equal(await page.locator('#totp-link').getAttribute('href'), otpauthUri('MFA', USERNAME, secret));
    await button(page, 'Copy the key').click();
    await notice(page, 'status', 'Key copied.');
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), secret);
    await screenshots(page, 'add-authenticator-app');

    totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    await page.locator('#totp-code').fill(appCode());
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Authenticator app added');
    await factorItem('Phone').locator('.badge', { hasText: 'Default' }).waitFor();
    await page.getByText('Two-step verification is on').waitFor();
    // Issue 29: the first way to verify brings the backup codes at once, shown once.
    await page.locator('#backup-codes li').nth(9).waitFor();
    await notice(page, 'status', 'Save these backup codes now');
    assert.equal(await focusedId(), 'backup-codes-title');
    await screenshots(page, 'first-factor-backup-codes');
    await button(page, 'I have saved them').click();
    assert.equal(await page.locator('#backup-codes li').count(), 0);
  });

  test('adding a passkey now asks to confirm it is you (password, then the app); Chromium’s authenticator makes it', async () => {
    await button(page, 'Add a passkey').click();
    await page.locator('#passkey-name').fill('Laptop');
    await page.keyboard.press('Enter');
    // The password-only login is too weak to add a factor while MFA is on: RFC 9470 step-up.
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    assert.equal(await focusedId(), 'password');
    assert.equal(await page.locator('#username').inputValue(), USERNAME);
    assert.equal(await page.locator('#username').getAttribute('readonly'), '');
    await screenshots(page, 'confirm-it-is-you');

    await page.keyboard.type(PASSWORD);
    const passwordStep = nextTokenAnswer(page);
    await page.keyboard.press('Enter');
    assert.equal((await passwordStep).mfa_type, 'totp');
    await page.getByRole('heading', { name: 'Second step: your authenticator app' }).waitFor();
    assert.equal(await focusedId(), 'code');
    service.clock.advance(30); // the code of the step the app was enrolled with is never accepted again
    await page.keyboard.type(appCode());
    await page.keyboard.press('Enter');

    await notice(page, 'status', 'Passkey “Laptop” added');
    await factorItem('Laptop').waitFor();
    assert.equal(await page.locator('#sign-in').isHidden(), true);
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1, 'the virtual authenticator holds the new passkey');
  });

  test('Escape closes a form or a confirmation and gives the focus back to the button that opened it', async () => {
    for (const [opener, opened] of [
      ['Rename “Phone”', factorItem('Phone').locator('form')],
      ['Remove “Phone”', factorItem('Phone').getByRole('button', { name: 'Keep it' })],
      ['Add a passkey', page.locator('#passkey-form')],
      ['Change your password', page.locator('#password-change-form')],
    ] as const) {
      await button(page, opener).click();
      await opened.waitFor();
      await page.keyboard.press('Escape');
      await opened.waitFor({ state: 'hidden' });
      assert.equal(await page.evaluate<string>('document.activeElement?.textContent ?? ""'), opener);
    }
  });

  test('making the passkey the default and renaming the app need no new confirmation right after it', async () => {
    await button(page, 'Make default “Laptop”').click();
    await notice(page, 'status', '“Laptop” is now your default');
    await factorItem('Laptop').locator('.badge', { hasText: 'Default' }).waitFor();

    await button(page, 'Rename “Phone”').click();
    assert.equal(await focusedId(), `name-${await factorItem('Phone').getAttribute('data-factor-id')}`);
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('Old phone');
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Renamed to “Old phone”');
    await factorItem('Old phone').waitFor();
    await screenshots(page, 'account');
  });

  test('a 64-character name fits a phone screen: in the list, the notice, the rename form and the removal question', async () => {
    await button(page, 'Rename “Old phone”').click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type(LONG_NAME);
    await page.keyboard.press('Enter');
    await notice(page, 'status', `Renamed to “${LONG_NAME}”`);
    await button(page, `Rename “${LONG_NAME}”`).click();
    await screenshots(page, 'long-name-rename', SCRATCH_DIR);
    await button(page, `Remove “${LONG_NAME}”`).click();
    await screenshots(page, 'long-name-remove', SCRATCH_DIR);
    await button(page, 'Keep it').click();

    await button(page, `Rename “${LONG_NAME}”`).click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('Old phone');
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Renamed to “Old phone”');
  });

  test('signing out revokes the login: its refresh token no longer refreshes', async () => {
    const revocation = page.waitForRequest((request) => request.url().endsWith('/mfa/oauth2/revoke/'));
    await button(page, 'Sign out').click();
    const refreshToken = new URLSearchParams((await revocation).postData() ?? '').get('token') ?? '';
    await notice(page, 'status', 'You are signed out.');
    await page.locator('#sign-in-title').waitFor();
    assert.equal(await focusedId(), 'username');
    const refused = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: { grant_type: 'refresh_token', refresh_token: refreshToken },
    });
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { error: string }).error, 'invalid_grant');
  });

  test('signing in again asks for the passkey, the default, offering the others; the passkey signs in (amr hwk)', async () => {
    await page.locator('#username').fill(USERNAME);
    await page.locator('#password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Second step: your passkey' }).waitFor();
    await button(page, 'Use your authenticator app').waitFor();
    await button(page, 'Use a backup code').waitFor();
    await screenshots(page, 'second-step');

    const tokens = nextTokenAnswer(page);
    await button(page, 'Use my passkey').click();
    assert.deepEqual(decodeJwt((await tokens).access_token).amr, ['pwd', 'hwk']);
    await page.locator('#account-title').waitFor();
    // Relative times; the service's clock runs ahead of the browser's in these tests: "just now".
    assert.match(
      (await factorItem('Laptop').locator('.factor-dates').textContent()) ?? '',
      /^Added (just now|\d+ minutes? ago) · Last used (just now|\d+ minutes? ago)$/,
    );
  });

  test('removing a factor after 10 minutes asks to confirm it is you again (with the passkey), then removes it', async () => {
    service.clock.advance(601);
    await button(page, 'Remove “Old phone”').click();
    await button(page, 'Yes, remove it').click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Use my passkey').click();
    await notice(page, 'status', 'Removed “Old phone”.');
    await factorItem('Laptop').waitFor();
    // The list is the service's answer to GET /mfa/factors/ after the removal.
    assert.deepEqual(await page.locator('#factor-list .factor-name').allTextContents(), ['Laptop']);
  });

  test('cancelling the confirmation changes nothing, and says so', async () => {
    service.clock.advance(601);
    await button(page, 'Remove “Laptop”').click();
    await button(page, 'Yes, remove it').click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await button(page, 'Cancel').click();
    await notice(page, 'alert', 'Nothing was changed');
    await factorItem('Laptop').waitFor();
  });

  test('backup codes are shown once, with a download as a text file; one of them signs in', async () => {
    // The set made with the first factor is replaced.
    await button(page, 'Create new backup codes').click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Use my passkey').click();
    await page.locator('#backup-codes li').nth(9).waitFor();
    const shown = (await page.locator('#backup-codes li').allTextContents()).map((code) => code.replace(/\s/g, ''));
    assert.equal(shown.length, 10);
    for (const code of shown) assert.match(code, /^\d{12}$/);
    // A click on "Create" now would cancel the set being saved: it is gone until they are put away.
    assert.equal(await page.locator('#backup-create').isHidden(), true);
    await screenshots(page, 'backup-codes');

    await button(page, 'Copy').click();
    await notice(page, 'status', 'Codes copied.');
    const copied = (await page.evaluate<string>('navigator.clipboard.readText()')).replace(/ /g, '');
    for (const code of shown) assert.ok(copied.includes(code), `the clipboard holds ${code}`);
    await page.evaluate('window.print = () => { window.printed = true; }');
    await button(page, 'Print').click();
    assert.equal(await page.evaluate<boolean>('window.printed === true'), true);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      button(page, 'Download as a text file').click(),
    ]);
    assert.equal(download.suggestedFilename(), 'backup-codes.txt');
    const file = readFileSync((await download.path()) ?? '', 'utf8');
    for (const code of shown) assert.ok(file.replace(/ /g, '').includes(code), `the file holds ${code}`);

    await button(page, 'I have saved them').click();
    assert.equal(await page.locator('#backup-codes li').count(), 0, 'the codes are gone from the page');
    assert.equal(await focusedId(), 'backup-create');
    await page.getByText('You have 10 unused backup codes').waitFor();

    await button(page, 'Sign out').click();
    await notice(page, 'status', 'You are signed out.');
    await page.locator('#username').fill(USERNAME);
    await page.locator('#password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Use a backup code').click();
    assert.equal(await focusedId(), 'code');
    await page.keyboard.type('0000 0000 0000');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'That backup code is wrong or was already used.');
    await page.keyboard.type(shown[0] ?? '');
    await page.keyboard.press('Enter');
    await page.locator('#account-title').waitFor();
    await notice(page, 'status', 'You signed in with a backup code: 9 backup codes are left.');
    await page.getByText('You have 9 unused backup codes').waitFor();
  });

  test('adding a phone: an impossible number, a wrong code and an early resend get clear messages; the right code adds it', async () => {
    const phone = smsPhone;
    await button(page, 'Add a phone for SMS codes').click();
    await page.locator('#sms-phone').fill('0044 7700 900123');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', /That phone number cannot be used: it starts with 0, which no country code does/);
    await screenshots(page, 'impossible-phone-number', SCRATCH_DIR);
    // The service's refusal is the input's: marked invalid, tied to the message, focused.
    assert.equal(await focusedId(), 'sms-phone');
    assert.equal(await page.locator('#sms-phone').getAttribute('aria-invalid'), 'true');
    const describedBy = (await page.locator('#sms-phone').getAttribute('aria-describedby')) ?? '';
    const messageId = describedBy.split(' ').find((id) => id !== 'sms-phone-hint') ?? '';
    assert.match(
      (await page.locator(`[id="${messageId}"]`).textContent()) ?? '',
      /it starts with 0, which no country code does/,
    );
    await page
      .locator('#sms-phone')
      .fill(`+${phone.slice(0, 1)} ${phone.slice(1, 4)} ${phone.slice(4, 7)} ${phone.slice(7)}`);
    await page.keyboard.press('Enter');
    // Said once: the intro, which describes the code field.
    await page.locator('#sms-verify-intro', { hasText: `We sent a 6-digit code to ${smsPhoneShown}.` }).waitFor();
    assert.equal(await page.locator('#sms-verify-form .notice:not([hidden])').count(), 0);
    assert.equal(await focusedId(), 'sms-code');
    const code = service.twilio.lastCodeFor(`+${phone}`);
    await page.keyboard.type(code === '000000' ? '111111' : '000000');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'That code is wrong, expired or already used.');
    assert.equal(await focusedId(), 'sms-code', 'the focus stays on the code');
    assert.equal(await page.locator('#sms-phone').getAttribute('aria-invalid'), null, 'the number is fine now');
    // The service's cooldown is information: the button counts it down, nothing is red.
    await button(page, 'Send a new code').click();
    await notice(page, 'status', 'The code sent moments ago still works.');
    const waiting = button(page, /^Send a new code \(\d+ s\)$/);
    assert.equal(await waiting.isDisabled(), true);
    const before = await waiting.textContent();
    await page.waitForTimeout(1100);
    assert.notEqual(await button(page, /^Send a new code/).textContent(), before, 'it counts down');
    assert.equal(await page.locator('.notice-error:not([hidden])').count(), 0);
    await screenshots(page, 'sms-cooldown', SCRATCH_DIR);
    await page.locator('#sms-code').fill(code);
    await page.keyboard.press('Enter');
    await notice(page, 'status', `Phone ${smsPhoneShown} added.`);
    await factorItem('SMS')
      .locator('.factor-type', { hasText: `SMS codes to ${smsPhoneShown}` })
      .waitFor();
    // One phone per account: adding another is not offered, and the page says what to do instead.
    assert.equal(await button(page, 'Add a phone for SMS codes').isHidden(), true);
    await page
      .getByText(`You already have a phone (ending ${phone.slice(-4)}). Remove it to add another number.`)
      .waitFor();
  });

  test('an expired access token is refreshed behind the scenes', async () => {
    service.clock.advance(901);
    const refresh = page.waitForRequest(
      (request) => request.url().endsWith('/mfa/oauth2/token/') && (request.postData() ?? '').includes('refresh_token'),
    );
    await button(page, 'Rename “SMS”').click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('Work phone');
    await page.keyboard.press('Enter');
    await refresh;
    await notice(page, 'status', 'Renamed to “Work phone”');
  });

  test('signing in with a code sent by SMS, chosen instead of the default passkey; the header spells the name as the account does', async () => {
    const phone = smsPhone;
    await button(page, 'Sign out').click();
    await page.locator('#username').fill(USERNAME.toUpperCase());
    await page.locator('#password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Text a code to my phone').click();
    await page.getByRole('heading', { name: 'Second step: a code by SMS' }).waitFor();
    assert.equal(await page.locator('#factor-who').textContent(), `Signing in as ${USERNAME.toUpperCase()}`);
    // Said once, in the prompt; the page does not know the phone before the sign-in, so names none.
    await page.getByText('Enter the 6-digit code we sent to your phone. It works for 5 minutes.').waitFor();
    assert.equal(await page.locator('#sign-in .notice:not([hidden])').count(), 0);
    assert.equal(await focusedId(), 'code');
    const tokens = nextTokenAnswer(page);
    await page.keyboard.type(service.twilio.lastCodeFor(`+${phone}`));
    await page.keyboard.press('Enter');
    assert.deepEqual(decodeJwt((await tokens).access_token).amr, ['pwd', 'sms']);
    await page.locator('#account-title').waitFor();
    assert.equal(await page.locator('#who-name').textContent(), USERNAME);
  });

  test('confirming it is you by SMS names the phone the account page knows', async () => {
    service.clock.advance(601);
    // The count of codes left is itself a sensitive read: a view refreshed after the clock moved
    // no longer knows it, and offers "Create backup codes".
    await button(page, /^Create (new )?backup codes$/).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Text a code to my phone').click();
    await page.getByText(`we sent to your phone ending ${smsPhone.slice(-4)}.`).waitFor();
    assert.equal(await page.locator('#factor-who').textContent(), `Signing in as ${USERNAME}`);
    await screenshots(page, 'second-step-sms', SCRATCH_DIR);
    await button(page, 'Cancel').click();
    await notice(page, 'alert', 'Nothing was changed');
  });

  test('too many wrong codes: the page says how long to wait', async () => {
    await button(page, 'Sign out').click();
    await page.locator('#username').fill(USERNAME);
    await page.locator('#password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await button(page, 'Use a backup code').click();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      await page.locator('#code').fill(`11112222333${attempt}`);
      await page.keyboard.press('Enter');
      await notice(page, 'alert', 'That backup code is wrong');
      await page.locator('#factor-submit:not([disabled])').waitFor();
    }
    await page.locator('#code').fill('111122223339');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'Too many wrong codes. Try again in 1 minute.');
  });

  test('no CSP violation, console error or script error in the whole journey', () => {
    assert.deepEqual(problems, []);
  });

  test('the CSP is enforced: an injected inline script does not run', async () => {
    const probe = await context.newPage();
    const messages: string[] = [];
    probe.on('console', (message) => messages.push(message.text()));
    await probe.goto(`${stack.origin}/account/`);
    await probe.addScriptTag({ content: 'window.inlineRan = true;' }).catch(() => undefined);
    assert.equal(await probe.evaluate<boolean>('window.inlineRan === true'), false);
    assert.ok(
      messages.some((message) => /Content Security Policy|TrustedScript/.test(message)),
      `Chromium reports the refusal: ${JSON.stringify(messages)}`,
    );
    await probe.close();
  });
});
