import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import {
  addVirtualAuthenticator,
  button,
  newDesktopPage,
  notice,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { type BrowserApp, startBrowserApp } from '../support/browser-app.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';

// Passkeys first (CONTRACT §19) in Debian's Chromium, with its virtual authenticator holding
// discoverable credentials and verifying the person: an account made without a password gets in
// from its invite link, then signs in with the passkey alone, on the account page and at an app.

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
let acme: BrowserApp;
const problems: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  acme = await startBrowserApp(stack);
  page = await newDesktopPage(browser);
  context = page.context();
  page.on('pageerror', (error) => problems.push(error.message));
  ({ cdp, authenticatorId } = await addVirtualAuthenticator(page, true));
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await acme?.close();
});

/**
 * Another tab whose own authenticator holds a copy of the page's passkey. Give it back with
 * `done`: the copy's signature counter has moved on, and the service takes a passkey whose
 * counter goes back for a clone (CONTRACT §12), so the page's authenticator takes the copy.
 */
async function tabWithThePasskey(prepare?: (tab: Page) => Promise<unknown>) {
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  const [credential] = credentials;
  assert.ok(credential, 'the virtual authenticator holds the passkey');
  const tab = await context.newPage();
  await prepare?.(tab);
  const copy = await addVirtualAuthenticator(tab, true);
  await copy.cdp.send('WebAuthn.addCredential', { authenticatorId: copy.authenticatorId, credential });
  const done = async () => {
    const moved = await copy.cdp.send('WebAuthn.getCredentials', { authenticatorId: copy.authenticatorId });
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId });
    await cdp.send('WebAuthn.addCredential', {
      authenticatorId,
      credential: moved.credentials[0] as typeof credential,
    });
    await tab.close();
  };
  return { tab, done };
}

describe('passkeys first in Chromium (CONTRACT §19)', () => {
  test('an account made without a password gets in from its invite link: the page makes the first passkey and signs in', async () => {
    const created = await expectStatus(
      service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username: 'noor' } }),
      201,
    );
    const link = new URL(created.invite_url);
    await page.goto(`${stack.origin}${link.pathname}${link.hash}`);
    await page.getByRole('heading', { name: 'Create your passkey' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the invite token leaves the address bar at once');
    await screenshots(page, 'invite');
    await page.locator('#invite').getByLabel('Name').fill('Laptop');
    await button(page, 'Create a passkey').click();
    await page.locator('#account-title').waitFor();
    assert.equal(await page.locator('#who-name').textContent(), 'noor');
    await page.getByText('signs in alone').waitFor();
    await page.getByText('Your account has no password: you sign in with your passkeys.').waitFor();
    // The link was used up.
    const again = await service.call('/mfa/invite/passkey/options/', {
      method: 'POST',
      body: { invite: link.hash.slice('#invite='.length) },
    });
    assert.equal(again.status, 410);
  });

  test('the username field offers passkeys by autofill: picking the passkey there signs in, no username typed', async () => {
    // Chromium's virtual authenticator picks the passkey from the autofill list, as a person would.
    const { tab, done } = await tabWithThePasskey();
    await tab.goto(`${stack.origin}/account/`);
    assert.equal(await tab.locator('#username').getAttribute('autocomplete'), 'username webauthn');
    await tab.locator('#account-title').waitFor();
    assert.equal(await tab.locator('#who-name').textContent(), 'noor');
    assert.equal(await tab.locator('#username').inputValue(), '', 'no username was typed');
    await done();
  });

  test('where the browser has no passkey autofill, the button signs in with a passkey alone', async () => {
    // A browser without conditional mediation: only the button offers the passkey.
    const { tab, done } = await tabWithThePasskey((without) =>
      without.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false;'),
    );
    await tab.goto(`${stack.origin}/account/`);
    await tab.locator('#sign-in-title').waitFor();
    await screenshots(tab, 'sign-in-with-passkey');
    await button(tab, 'Sign in with a passkey').click();
    await tab.locator('#account-title').waitFor();
    assert.equal(await tab.locator('#who-name').textContent(), 'noor');
    await done();
  });

  test('an app signs the person in with the passkey alone at the hosted sign-in: amr hwk user, acr phr', async () => {
    const config = await acme.register({ name: 'Treasury' });
    const signIn = await acme.sendToSignIn(page, config, { scope: 'openid', acr_values: 'phr', prompt: 'login' });
    // The authenticator answers the username field's autofill or the button, whichever asks first.
    await page
      .getByRole('button', { name: 'Sign in with a passkey' })
      .click({ timeout: 2000 })
      .catch(() => undefined);
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['hwk', 'user']);
    assert.equal(tokens.claims()?.acr, 'phr');
  });

  test('with a second passkey the password can go, and come back; the page says so', async () => {
    await page.goto(`${stack.origin}/account/`);
    // The username's autofill offers the passkey, and the authenticator picks it.
    await page.locator('#account-title').waitFor();
    await button(page, 'Add a password').click();
    await page.getByLabel('New password').fill('a long new passphrase');
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Password added.');
    await page.getByText('You sign in with your password').waitFor();
    assert.equal(await page.locator('#password-remove').isHidden(), true, 'one passkey: the password stays');

    // A second passkey, on another authenticator (the first would refuse to hold a second one).
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'usb',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    }));
    await button(page, 'Add a passkey').click();
    await page.locator('#passkey-name').fill('Blue key');
    await button(page, 'Create the passkey').click();
    await notice(page, 'status', 'Passkey “Blue key” added');
    await page.getByText('With two passkeys you may do without the password.').waitFor();
    await screenshots(page, 'password-with-two-passkeys');

    await button(page, 'Remove your password').click();
    await button(page, 'Yes, remove it').click();
    await notice(page, 'status', 'Password removed: you sign in with your passkeys.');
    await page.getByText('Your account has no password: you sign in with your passkeys.').waitFor();
    const grant = await service.login('noor', 'a long new passphrase');
    assert.equal(grant.status, 400, 'the removed password no longer signs in');
    assert.match(((await grant.json()) as { error_description: string }).error_description, /passkey/);

    await button(page, 'Add a password').click();
    await page.getByLabel('New password').fill('another long passphrase');
    await page.keyboard.press('Enter');
    await notice(page, 'status', 'Password added.');
    await page.getByText('You sign in with your password, or a passkey alone.').waitFor();
  });

  test('no script error on the way', () => {
    assert.deepEqual(problems, []);
  });
});
