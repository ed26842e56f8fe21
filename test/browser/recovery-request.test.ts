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
import { createTotpUser, PASSWORD } from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';

// CONTRACT §20 on the account page, in Chromium: a recovery request made before the sign-in was
// cancelled by it, and the page says so; one made while the page is open shows when the person
// comes back to the tab, with a button that cancels it.

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
let user: Awaited<ReturnType<typeof createTotpUser>>;
const pageErrors: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  user = await createTotpUser(service, 'dana');
  page = await newDesktopPage(browser);
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
  await stack?.close();
});

function askForRecovery() {
  return expectStatus(
    service.call('/mfa/recovery-request/', { method: 'POST', body: { username: user.username, password: PASSWORD } }),
    202,
  );
}

describe('a recovery request on the account page', () => {
  test('one asked for before the sign-in: signing in with the app cancelled it, and the page says so', async () => {
    await askForRecovery();
    await page.goto(`${stack.origin}/account/`);
    await enterPassword(page, user.username, PASSWORD);
    await page.getByRole('heading', { name: 'Second step: your authenticator app' }).waitFor();
    await page.locator('#code').fill(user.code());
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'A recovery request was cancelled' }).waitFor();
    assert.match(
      (await page.locator('#recovery-summary').textContent()) ?? '',
      /it was cancelled when you signed in\. If it was not you, change your password\.$/,
    );
    assert.equal(await button(page, 'Cancel the recovery').isVisible(), false, 'nothing left to cancel');
    await screenshots(page, 'account-recovery-cancelled');
  });

  test('one asked for while the page is open shows on coming back to the tab; Cancel cancels it', async () => {
    const { ready_at } = await askForRecovery();
    // What a browser fires when the person comes back to the tab (from the notice mail, say).
    await page.evaluate("document.dispatchEvent(new Event('visibilitychange'))");
    await page.getByRole('heading', { name: 'Someone asked to recover your account' }).waitFor();
    const when = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(
      new Date(ready_at),
    );
    assert.ok(((await page.locator('#recovery-summary').textContent()) ?? '').includes(`from ${when}`), when);
    await screenshots(page, 'account-recovery-waiting');

    await button(page, 'Cancel the recovery').click();
    await notice(page, 'status', 'Recovery cancelled: your ways to verify stay as they are.');
    // Cancelled by the person (a sign-in would say by_sign_in).
    const { events } = await expectStatus(
      service.call(`/admin/users/${user.userId}/events`, { token: ADMIN_TOKEN }),
      200,
    );
    const cancels = events.filter((event: { type: string }) => event.type === 'recovery_cancelled');
    assert.deepEqual(cancels.map((event: { outcome: string }) => event.outcome).sort(), ['by_sign_in', 'by_user']);
    assert.deepEqual(pageErrors, []);
  });
});
