import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import {
  addVirtualAuthenticator,
  button,
  newDesktopPage,
  notice,
  recordProblems,
  type ServiceOnLocalhost,
  screenshots,
  signInAtHostedPage,
  startServiceAndChromium,
} from '../support/browser.js';
import { type BrowserApp, startBrowserApp } from '../support/browser-app.js';
import { createTotpUser, PASSWORD } from '../support/openid-flow.js';
import type { Service } from '../support/service.js';

// The hosted sign-in (CONTRACT §18) in Debian's Chromium, as a person meets it between an app and
// its tokens: the app (openid-client, unmodified) sends the browser to the authorization endpoint;
// the page asks for the password, then the second factor, or takes the person through adding one;
// the browser lands back on the app's redirect URI, where the app exchanges the code.

/** The app that sends people here. */
let acme: BrowserApp;

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** The codes the first factor's enrolment showed. */
let ivanBackupCodes: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  page = await newDesktopPage(browser);
  // The API's refusals (a wrong password, say) are part of the flow.
  recordProblems(page, problems, { origin: stack.origin, path: '/mfa/' });
  acme = await startBrowserApp(stack);
  // A security key: its passkeys are second factors. Signing in with a passkey alone has its test.
  await addVirtualAuthenticator(page, false);
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await acme?.close();
});

/** The app sends the browser to sign in; answers what the app needs to finish. */
const startAt = (config: client.Configuration, extra: Record<string, string> = {}) =>
  acme.sendToSignIn(page, config, extra);

function focusedId(): Promise<string> {
  return page.evaluate<string>('document.activeElement?.id ?? ""');
}

describe('the hosted sign-in in Chromium (CONTRACT §18)', () => {
  let hanna: Awaited<ReturnType<typeof createTotpUser>>;

  test('it names the app; the keyboard alone signs in with a password and an authenticator app', async () => {
    hanna = await createTotpUser(service, 'hanna');
    service.clock.advance(30);

    const config = await acme.register();
    const signIn = await startAt(config);
    await page.getByText('Sign in to continue to Acme web.').waitFor();
    const headers = (await page.request.get(page.url())).headers();
    assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    assert.equal(await focusedId(), 'username');
    await screenshots(page, 'hosted-sign-in');

    await page.keyboard.type('hanna');
    await page.keyboard.press('Tab');
    await page.keyboard.type('wrong password');
    await page.keyboard.press('Enter');
    await notice(page, 'alert', 'The username or password is wrong.');
    assert.equal(await focusedId(), 'password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Second step: your authenticator app' }).waitFor();
    assert.equal(await focusedId(), 'code');
    assert.equal(await page.locator('#factor-who').textContent(), 'Signing in as hanna');
    await screenshots(page, 'hosted-second-step');
    await page.getByLabel('Code from the app').fill(hanna.currentCode());
    await page.keyboard.press('Enter');
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
  });

  test('a second app in the same browser signs in without asking again', async () => {
    const config = await acme.register({ name: 'Second app' });
    const signIn = await startAt(config);
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
  });

  test('signing out of the account page ends the browser’s sign-in session: the next app asks again', async () => {
    await page.goto(`${stack.origin}/account/`);
    await page.getByLabel('Username').fill('hanna');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await page.getByLabel('Code from the app').fill(hanna.code());
    await button(page, 'Verify').click();
    await page.locator('#account-title').waitFor();
    const endSession = page.waitForResponse((response) => response.url().endsWith('/mfa/oauth2/logout/'));
    await button(page, 'Sign out').click();
    assert.equal((await endSession).status(), 204);
    await notice(page, 'status', 'You are signed out.');

    const config = await acme.register({ name: 'After sign-out' });
    await startAt(config);
    await page.getByText('Sign in to continue to After sign-out.').waitFor();
  });

  test('an app that requires a second factor takes a user without one through adding an authenticator app', async () => {
    await service.createUser('ivan', PASSWORD);
    const config = await acme.register({ name: 'Payroll', mfa_policy: 'required' });
    const signIn = await startAt(config, { prompt: 'login' });
    await page.getByLabel('Username').fill('ivan');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await page.getByRole('heading', { name: 'Add a way to verify' }).waitFor();
    await page.getByText('Payroll asks for two-step verification.').waitFor();
    await button(page, 'Add an authenticator app').click();
    await page.keyboard.press('Enter');
    await page.locator('#totp-qr svg').waitFor();
    await screenshots(page, 'hosted-add-factor');
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    const added = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    await page.locator('#totp-code').fill(added.generate({ timestamp: service.clock.now().getTime() }));
    await page.keyboard.press('Enter');
    // The first way to verify brings the backup codes, shown once before going back to the app.
    await page.getByRole('heading', { name: 'Your new backup codes' }).waitFor();
    assert.equal(await page.locator('#backup-codes li').count(), 10);
    await page.getByText('Authenticator app added.').waitFor();
    await button(page, 'Copy').waitFor();
    await button(page, 'Print').waitFor();
    await screenshots(page, 'hosted-backup-codes');
    ivanBackupCodes = (await page.locator('#backup-codes li').allTextContents()).map((code) => code.replace(/\s/g, ''));
    await button(page, 'I have saved them, continue to Payroll').click();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
  });

  test('a sign-in with a backup code says how many are left before going back to the app', async () => {
    const config = await acme.register({ name: 'Ledger' });
    const signIn = await startAt(config, { prompt: 'login' });
    await page.getByLabel('Username').fill('ivan');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await button(page, 'Use a backup code').click();
    await page.locator('#code').fill(ivanBackupCodes[0] ?? '');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'You signed in with a backup code' }).waitFor();
    await page.getByText('9 backup codes are left.').waitFor();
    assert.equal(await focusedId(), 'backup-used-title');
    await screenshots(page, 'hosted-backup-code-used');
    await button(page, 'Continue to Ledger').click();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'backup']);
  });

  test('acr_values=phr takes a person through adding a passkey (Chromium’s authenticator), then signs in with it alone as the second step', async () => {
    await service.createUser('jo', PASSWORD);
    const config = await acme.register({ name: 'Treasury' });
    let signIn = await startAt(config, { prompt: 'login', acr_values: 'phr' });
    await page.getByLabel('Username').fill('jo');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await page.getByRole('heading', { name: 'Add a passkey' }).waitFor();
    assert.equal(await page.locator('#add-totp').isHidden(), true, 'only a passkey reaches phr');
    await button(page, 'Add a passkey').click();
    await page.locator('#passkey-name').fill('Laptop');
    await page.keyboard.press('Enter');
    await button(page, 'I have saved them, continue to Treasury').click();
    let tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'hwk']);
    assert.equal(tokens.claims()?.acr, 'phr');

    signIn = await startAt(config, { prompt: 'login' });
    await page.getByLabel('Username').fill('jo');
    await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
    await button(page, 'Continue').click();
    await page.getByRole('heading', { name: 'Second step: your passkey' }).waitFor();
    await button(page, 'Use my passkey').click();
    tokens = await signIn.back();
    assert.equal(tokens.claims()?.acr, 'phr');
  });

  test('the authorization endpoint answers with the page, which takes its own address: a reload there goes on with the same sign-in', async () => {
    await service.createUser('ines', PASSWORD);
    const config = await acme.register({ name: 'Reloaded app' });
    const signIn = await startAt(config, { prompt: 'login' });
    await page.getByText('Sign in to continue to Reloaded app.').waitFor();
    const address = new URL(page.url());
    assert.equal(address.pathname, '/sign-in/');
    const id = address.searchParams.get('id') ?? '';
    assert.match(id, /^[0-9a-f-]{36}$/);
    // The description was handed over once: the reload asks the API for the same sign-in.
    const described = page.waitForResponse((response) => response.url().endsWith(`/mfa/oauth2/sign-in/${id}/`));
    await page.reload();
    assert.equal((await described).status(), 200);
    await page.getByText('Sign in to continue to Reloaded app.').waitFor();
    await signInAtHostedPage(page, 'ines');
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd']);
  });

  test('the page with no sign-in named (no ?id=, no handed-over description) says the sign-in has expired', async () => {
    await page.goto(`${stack.origin}/sign-in/`);
    await page.getByRole('heading', { name: 'This sign-in has expired' }).waitFor();
    assert.equal(await page.locator('#sign-in').isHidden(), true);
  });

  test('cancelling goes back to the app with access_denied', async () => {
    const config = await acme.register({ name: 'Cancelled app' });
    await startAt(config, { prompt: 'login' });
    await page.getByLabel('Username').waitFor();
    await button(page, 'Cancel').click();
    await page.waitForURL((current) => current.toString().startsWith(acme.callback));
    assert.equal(new URL(page.url()).searchParams.get('error'), 'access_denied');
  });

  test('“this device” ticked at the second step: the next sign-in in this browser asks for the password alone (acr aal2) until the account page forgets it', async () => {
    const config = await acme.register({ name: 'Intranet', remember_device_days: 30 });
    const code = hanna.code;
    const signInWithPassword = async () => {
      await page.getByLabel('Username').fill('hanna');
      await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
      await button(page, 'Continue').click();
    };
    let signIn = await startAt(config, { prompt: 'login' });
    await signInWithPassword();
    await page.getByRole('heading', { name: 'Second step: your authenticator app' }).waitFor();
    const remember = page.getByLabel("Don't ask for the second step on this device for 30 days");
    assert.equal(await remember.isChecked(), false, 'not ticked unless the person ticks it');
    await remember.check();
    await screenshots(page, 'hosted-remember-device');
    await page.getByLabel('Code from the app').fill(code());
    await page.keyboard.press('Enter');
    assert.equal((await signIn.back()).claims()?.acr, 'aal2');

    signIn = await startAt(config, { prompt: 'login' });
    await signInWithPassword();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    assert.equal(tokens.claims()?.acr, 'aal2');

    // The account page lists the browser and forgets it.
    await page.goto(`${stack.origin}/account/`);
    await signInWithPassword();
    await page.getByLabel('Code from the app').fill(code());
    await button(page, 'Verify').click();
    await page.getByRole('heading', { name: 'Remembered devices' }).waitFor();
    await page.locator('#device-list').getByText('Chrome on Linux', { exact: true }).waitFor();
    await screenshots(page, 'account-remembered-devices');
    await page.getByRole('button', { name: 'Forget “Chrome on Linux”' }).click();
    await notice(page, 'status', 'Chrome on Linux forgotten: it asks for the second step again.');
    assert.equal(await page.locator('#devices-panel').isHidden(), true);

    await startAt(config, { prompt: 'login' });
    await signInWithPassword();
    await page.getByRole('heading', { name: 'Second step: your authenticator app' }).waitFor();
  });

  test('no CSP violation, console error or script error in the whole journey', () => {
    assert.deepEqual(problems, []);
  });
});
