// The operators' console (CONTRACT §21) in Debian's Chromium: an operator signs in through the
// hosted sign-in with an authenticator app, finds a user, sees their factors and sessions, resets
// their MFA and sees the audit event; reads the SMS sends per country as a chart and resumes a
// paused country; reads the sign-ins chart; a change after STEP_UP_MAX_AGE signs in again and
// comes back to it; the keyboard alone works; a non-operator, and an operator without a second
// factor, see why there is nothing and no data.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  button,
  newDesktopPage,
  notice,
  recordProblems,
  type ServiceOnLocalhost,
  screenshots,
  signInAtHostedPage,
  startServiceAndChromium,
} from '../support/browser.js';
import { addSmsSends, createOperatorAndUser, grantOperator, pauseCountry } from '../support/console.js';
import { createMailUser } from '../support/mail-users.js';
import { createTotpUser, PASSWORD } from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
const problems: string[] = [];

before(async () => {
  // The webhook receiver listens on 127.0.0.1.
  ({ stack, service, browser } = await startServiceAndChromium({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } }));
});

after(async () => {
  await browser?.close();
  await stack?.close();
});

/** A page in a browser of its own (no sign-in session), whose script errors fail the test. */
async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
  const page = await newDesktopPage(browser);
  // The admin API's refusals are not problems: the console answers them by signing in again or saying why.
  recordProblems(page, problems, { origin: stack.origin, path: '/admin/' });
  return { context: page.context(), page };
}

const consoleUrl = () => `${stack.origin}/admin/console/`;

function focusedId(page: Page): Promise<string> {
  return page.evaluate<string>('document.activeElement?.id ?? ""');
}

describe('the operators’ console in Chromium (CONTRACT §21)', () => {
  let page: Page;
  let context: BrowserContext;
  let operator: Awaited<ReturnType<typeof createTotpUser>>;
  let tina: Awaited<ReturnType<typeof createTotpUser>>;

  before(async () => {
    ({ operator, tina } = await createOperatorAndUser(service));
    await createMailUser(service, 'tim', PASSWORD, { email: 'tim@example.com' });
    ({ context, page } = await freshPage());
  });

  after(async () => {
    await context.close();
    assert.deepEqual(problems, []);
  });

  test('an operator signs in with an authenticator app, finds a user by name and sees their factors and sessions', async () => {
    await page.goto(consoleUrl());
    await page.getByText('Sign in to continue to Operators’ console.').waitFor();
    await signInAtHostedPage(page, 'olga', operator.code);
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    assert.equal(await page.locator('#who-name').textContent(), 'olga');
    assert.equal(new URL(page.url()).search, '', 'the code and state leave the address bar');
    const headers = (await page.request.get(consoleUrl())).headers();
    assert.match(headers['content-security-policy'] ?? '', /require-trusted-types-for 'script'/);

    await page.getByLabel('Username or email').fill('TI');
    await page.keyboard.press('Enter');
    await button(page, 'tim').waitFor();
    await button(page, /^tina/).click();
    await page.getByRole('heading', { name: 'tina', level: 2 }).waitFor();
    assert.equal(await focusedId(page), 'user-name');
    assert.match((await page.locator('#user-factors').textContent()) ?? '', /Authenticator app · the default/);
    assert.match(
      (await page.locator('#user-sessions').textContent()) ?? '',
      /signed in .* with password and authenticator app/,
    );
    await screenshots(page, 'console-users');
  });

  test('a user found by the start of their email address', async () => {
    await page.getByLabel('Username or email').fill('TIM@EX');
    await page.keyboard.press('Enter');
    // The earlier search's list (tim and tina) stays until this one's answer replaces it.
    await page.locator('#user-results > li').nth(1).waitFor({ state: 'detached' });
    await button(page, 'tim').waitFor();
    assert.equal(await page.locator('#user-results > li').count(), 1);
  });

  test('resetting MFA asks by name, then shows the user without factors and the audit event', async () => {
    await page.getByLabel('Username or email').fill('tina');
    await page.keyboard.press('Enter');
    await button(page, /^tina/).click();
    await page.getByRole('heading', { name: 'tina', level: 2 }).waitFor();
    await button(page, 'Reset MFA').click();
    await page.getByText('Reset tina’s MFA?', { exact: false }).waitFor();
    assert.equal(await focusedId(page), 'user-confirm-yes');
    await screenshots(page, 'console-reset-mfa');
    await button(page, 'Yes, reset tina’s MFA').click();
    await notice(page, 'status', 'tina’s MFA is reset');
    await page.locator('#user-factors', { hasText: 'No way to verify' }).waitFor();
    await page.locator('#user-events', { hasText: 'MFA disabled: reset by operator' }).waitFor();
    assert.match((await page.locator('#user-sessions').textContent()) ?? '', /No session/);
    const { factors } = await expectStatus(service.call(`/admin/users/${tina.userId}`, { token: ADMIN_TOKEN }), 200);
    assert.deepEqual(factors, []);
  });

  test('an invite for a user without factors: confirmed by name, the link shown once', async () => {
    await button(page, 'Send an invite').click();
    await button(page, 'Yes, make an invite for tina').click();
    await notice(page, 'status', 'An invite for tina is made: send them the link below.');
    const link = await page.getByLabel('Invite link (shown this once, valid 24 hours)').inputValue();
    assert.match(link, new RegExp(`^${stack.origin}/account/#invite=[A-Za-z0-9_-]{20,}$`));
    assert.equal(await focusedId(page), 'user-invite-url');
  });

  test('the keyboard alone: Tab to a button, Enter opens the confirmation, Escape closes it and gives the focus back', async () => {
    await page.locator('#user-delete').focus();
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focusedId(page), 'user-end-sessions');
    await page.keyboard.press('Tab');
    assert.equal(await focusedId(page), 'user-delete');
    await page.keyboard.press('Enter');
    await page.getByText('Delete tina? The account and everything about it is removed').waitFor();
    assert.equal(await focusedId(page), 'user-confirm-yes');
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#user-confirm').isHidden(), true);
    assert.equal(await focusedId(page), 'user-delete');
    await expectStatus(service.call(`/admin/users/${tina.userId}`, { token: ADMIN_TOKEN }), 200);
  });

  test('SMS sends per country per hour as a chart; a paused country is resumed', async () => {
    for (const [country, hoursAgo, sends] of [
      ['US', 30, 12],
      ['US', 5, 40],
      ['US', 1, 25],
      ['GB', 20, 8],
      ['GB', 0, 310],
      ['NG', 3, 15],
    ] as const) {
      await addSmsSends(service, country, hoursAgo, sends);
    }
    await pauseCountry(service, 'GB');
    await page.getByRole('link', { name: 'SMS' }).click();
    await page.getByRole('heading', { name: 'SMS', level: 1 }).waitFor();
    await page.locator('#sms-chart canvas').waitFor();
    assert.equal(
      await page.locator('#sms-summary').textContent(),
      '410 enrolment SMS in the last 7 days: GB 318, US 77, NG 15.',
    );
    const legend = await page.locator('#sms-chart .u-legend').textContent();
    for (const country of ['US', 'GB', 'NG']) assert.ok(legend?.includes(country), `${country} in the legend`);
    const gb = page.locator('#sms-countries tr', { hasText: 'GB' });
    assert.match((await gb.textContent()) ?? '', /310 \/ .*Paused until/);
    await screenshots(page, 'console-sms');

    await gb.getByRole('button', { name: 'Resume GB' }).click();
    await notice(page, 'status', 'Enrolment SMS to GB are sent again for the rest of this hour.');
    assert.match((await page.locator('#sms-countries tr', { hasText: 'GB' }).textContent()) ?? '', /Resumed at/);
    const { countries } = await expectStatus(service.call('/admin/sms/countries', { token: ADMIN_TOKEN }), 200);
    const resumed = countries.find((row: { country: string }) => row.country === 'GB');
    assert.equal(resumed.paused_until, null);
  });

  test('sign-ins per hour as a chart of successes, refusals and throttles', async () => {
    await service.login('tina', 'a wrong password');
    await page.getByRole('link', { name: 'Sign-ins' }).click();
    await page.getByRole('heading', { name: 'Sign-ins', level: 1 }).waitFor();
    await page.locator('#sign-ins-chart canvas').waitFor();
    assert.match(
      (await page.locator('#sign-ins-summary').textContent()) ?? '',
      /\d+ succeeded, [1-9]\d* refused, 0 throttled/,
    );
    await screenshots(page, 'console-sign-ins');
  });

  test('clients: one created (its secret shown once), edited, its secret rotated; a bad redirect URI is refused at the form', async () => {
    await page.getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('heading', { name: 'Clients', level: 1 }).waitFor();
    await page.locator('#client-list tr', { hasText: 'Operators’ console' }).getByText('built in').waitFor();
    await button(page, 'New client').click();
    assert.equal(await focusedId(page), 'client-name');
    await page.getByLabel('Name', { exact: true }).fill('Payroll');
    await page.getByLabel('Redirect URIs').fill('http://payroll.example.com/callback');
    await button(page, 'Create the client').click();
    await notice(page, 'alert', /redirect_uris/i);
    await page.getByLabel('Redirect URIs').fill('https://payroll.example.com/callback\nhttp://127.0.0.1/callback');
    await button(page, 'Create the client').click();
    await notice(page, 'status', 'Payroll is created.');
    const secret = await page.locator('#client-secret').inputValue();
    assert.match(secret, /^[A-Za-z0-9_-]{20,}$/);
    const row = page.locator('#client-list tr', { hasText: 'Payroll' });
    const clientId = (await row.locator('td.id').textContent()) ?? '';
    await screenshots(page, 'console-clients');

    await row.getByRole('button', { name: 'Edit Payroll' }).click();
    assert.equal(
      await page.getByLabel('Redirect URIs').inputValue(),
      'https://payroll.example.com/callback\nhttp://127.0.0.1/callback',
    );
    await page.getByLabel('Second factor', { exact: true }).selectOption('required');
    await page.getByLabel('Days a browser may skip the second step').fill('30');
    await screenshots(page, 'console-client-form');
    await button(page, 'Save the changes').click();
    await notice(page, 'status', 'Payroll is saved.');
    const saved = await expectStatus(service.call(`/admin/clients/${clientId}`, { token: ADMIN_TOKEN }), 200);
    assert.equal(saved.mfa_policy, 'required');
    assert.equal(saved.remember_device_days, 30);
    assert.deepEqual(saved.redirect_uris, ['https://payroll.example.com/callback', 'http://127.0.0.1/callback']);

    await page.locator('#client-list tr', { hasText: 'Payroll' }).getByRole('button', { name: 'Edit Payroll' }).click();
    await button(page, 'Rotate the secret').click();
    await page.keyboard.press('Escape');
    assert.equal(await focusedId(page), 'client-rotate');
    await button(page, 'Rotate the secret').click();
    await button(page, 'Yes, rotate Payroll’s secret').click();
    await notice(page, 'status', 'Payroll has a new secret; the old one no longer works.');
    const rotated = await page.locator('#client-secret').inputValue();
    assert.notEqual(rotated, secret);
    const basic = (pair: string) => `Basic ${Buffer.from(pair).toString('base64')}`;
    const introspect = (pair: string) =>
      service.call('/mfa/oauth2/introspect/', {
        method: 'POST',
        headers: { authorization: basic(pair), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=nothing',
      });
    assert.equal((await introspect(`${clientId}:${secret}`)).status, 401, 'the old secret');
    assert.equal((await introspect(`${clientId}:${rotated}`)).status, 200, 'the new secret');
  });

  test('webhooks: an endpoint added (its secret shown once), its deliveries, one sent again, the endpoint removed', async () => {
    const receiver = await startWebhookReceiver();
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      await page.getByLabel('URL', { exact: true }).fill(`${receiver.url}/console`);
      await page.getByLabel('Events', { exact: true }).fill('mfa.reset_by_operator');
      await button(page, 'Add the endpoint').click();
      await notice(page, 'status', `${receiver.url}/console is added.`);
      assert.match(await page.locator('#webhook-secret').inputValue(), /^whsec_/);

      const tim = await expectStatus(service.call('/admin/users?username=tim', { token: ADMIN_TOKEN }), 200);
      await expectStatus(service.call(`/admin/users/${tim.id}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      const [first] = await receiver.waitFor('/console', 1);
      const { webhooks } = await expectStatus(service.call('/admin/webhooks', { token: ADMIN_TOKEN }), 200);
      const endpointId = webhooks.find((one: { url: string }) => one.url === `${receiver.url}/console`).id;
      await eventually(async () => {
        const { deliveries } = await expectStatus(
          service.call(`/admin/webhooks/${endpointId}/deliveries`, { token: ADMIN_TOKEN }),
          200,
        );
        return deliveries[0]?.status === 'succeeded';
      });
      await button(page, `Deliveries to ${receiver.url}/console`).click();
      await page.getByRole('heading', { name: `Deliveries to ${receiver.url}/console` }).waitFor();
      const row = page.locator('#webhook-delivery-list tr', { hasText: 'mfa.reset_by_operator' });
      assert.match((await row.textContent()) ?? '', /Delivered \(204\)/);
      await screenshots(page, 'console-webhooks');
      await row.getByRole('button', { name: /^Send again/ }).click();
      await notice(page, 'status', 'The mfa.reset_by_operator event is sent again within moments.');
      const [, again] = await receiver.waitFor('/console', 2);
      assert.equal(again?.headers['webhook-id'], first?.headers['webhook-id']);

      await button(page, `Remove ${receiver.url}/console`).click();
      await button(page, 'Yes, remove it').click();
      await notice(page, 'status', `${receiver.url}/console is removed.`);
      assert.equal(await page.locator('#webhook-deliveries').isHidden(), true);
    } finally {
      await receiver.close();
    }
  });

  test('signing keys: listed with what each does; rotated after a confirmation', async () => {
    await page.getByRole('link', { name: 'Signing keys' }).click();
    await page.getByRole('heading', { name: 'Signing keys', level: 1 }).waitFor();
    const signing = page.locator('#key-list tr', { hasText: 'Signs' });
    await signing.nth(2).waitFor();
    const before = await page.locator('#key-list tr').count();
    await button(page, 'Rotate the keys').click();
    await button(page, 'Yes, rotate the keys').click();
    await notice(page, 'status', /^New keys sign from now on/);
    assert.equal(await page.locator('#key-list tr').count(), before + 3);
    assert.equal(await signing.count(), 3);
    assert.equal(await page.locator('#key-list tr', { hasText: 'Published' }).count(), 3);
    await screenshots(page, 'console-signing-keys');
  });

  test('a user locked out by wrong passwords is unlocked', async () => {
    for (let attempt = 0; attempt < 5; attempt += 1) await service.login('tina', 'not her password');
    assert.equal((await service.login('tina', PASSWORD)).status, 429);
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByLabel('Username or email').fill('tina');
    await page.keyboard.press('Enter');
    await button(page, /^tina/).click();
    await page.getByText('Too many wrong passwords or codes: sign-ins wait until').waitFor();
    await button(page, 'Unlock').click();
    await button(page, 'Yes, unlock tina').click();
    await notice(page, 'status', 'tina can sign in again.');
    assert.equal(await page.locator('#user-locked').isHidden(), true);
    assert.equal((await service.login('tina', PASSWORD)).status, 200);
  });

  test('a change after STEP_UP_MAX_AGE signs in again, then comes back to the change to confirm', async () => {
    service.clock.advance(601);
    await button(page, 'End sessions').click();
    await button(page, 'Yes, end tina’s sessions').click();
    await signInAtHostedPage(page, 'olga', operator.code);
    await notice(page, 'status', 'You signed in again. Confirm to go on.');
    assert.equal(await focusedId(page), 'user-confirm-yes');
    await button(page, 'Yes, end tina’s sessions').click();
    await notice(page, 'status', 'All of tina’s sessions have ended.');
  });

  test('deleting a user names them; the user is gone', async () => {
    await button(page, 'Delete user').click();
    await button(page, 'Yes, delete tina').click();
    await notice(page, 'status', 'tina is deleted.');
    await expectStatus(service.call(`/admin/users/${tina.userId}`, { token: ADMIN_TOKEN }), 404);
  });
});

describe('signing out', () => {
  test('Sign out ends the browser’s session: the console says so, and the next visit asks again', async () => {
    const sam = await createTotpUser(service, 'sam');
    await grantOperator(service, 'sam');
    const { context, page } = await freshPage();
    await page.goto(consoleUrl());
    await signInAtHostedPage(page, 'sam', sam.code);
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    await button(page, 'Sign out').click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    assert.equal(await page.locator('#nav').isHidden(), true);
    await button(page, 'Sign in again').click();
    await page.getByText('Sign in to continue to Operators’ console.').waitFor();
    await context.close();
  });
});

describe('who gets nothing', () => {
  test('a user who is not an operator sees why, and no data', async () => {
    const nina = await createTotpUser(service, 'nina');
    const { context, page } = await freshPage();
    await page.goto(consoleUrl());
    await signInAtHostedPage(page, 'nina', nina.code);
    await page.getByRole('heading', { name: 'You are not an operator' }).waitFor();
    assert.equal(await page.locator('#nav').isHidden(), true);
    assert.equal(await page.locator('#users-view').isHidden(), true);
    assert.equal(await page.locator('#user-results li').count(), 0);
    await screenshots(page, 'console-not-operator');
    await context.close();
  });

  test('an operator whose sign-in has no second factor is asked to add a passkey or an authenticator app', async () => {
    await service.createUser('paul', PASSWORD);
    await grantOperator(service, 'paul');
    const { context, page } = await freshPage();
    await page.goto(consoleUrl());
    await signInAtHostedPage(page, 'paul');
    await page.getByRole('heading', { name: 'Add a passkey or an authenticator app' }).waitFor();
    assert.equal(await page.locator('#users-view').isHidden(), true);
    assert.equal(await page.locator('#user-results li').count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Open your account page' }).isVisible(), true);
    await context.close();
  });
});
