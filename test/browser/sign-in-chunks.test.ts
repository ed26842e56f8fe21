import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import {
  button,
  newDesktopPage,
  recordProblems,
  type ServiceOnLocalhost,
  startServiceAndChromium,
} from '../support/browser.js';
import { type BrowserApp, startBrowserApp } from '../support/browser-app.js';
import { PASSWORD } from '../support/openid-flow.js';
import type { Service } from '../support/service.js';

// Issue 33: the hosted sign-in's first load carries what every sign-in needs. Adding a factor while
// signing in (the enrolment, and the backup codes after it) is a chunk of its own, fetched when a
// sign-in reaches that step, with its texts in the page's language; like the page's script, each
// chunk is checked against the Subresource Integrity hash the HTML gives it before it runs
// (web/shared/modules.ts).

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let acme: BrowserApp;
/** An app that asks for nothing more than a password. */
let plainApp: client.Configuration;
/** An app that requires a second factor (mfa_policy required): a user without one adds one. */
let payroll: client.Configuration;
let users = 0;

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  acme = await startBrowserApp(stack);
  plainApp = await acme.register({ name: 'Notes' });
  payroll = await acme.register({ name: 'Payroll', mfa_policy: 'required' });
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await acme?.close();
});

const sri = (bytes: Buffer) => `sha384-${createHash('sha384').update(bytes).digest('base64')}`;

/** What the built sign-in page names: its script, the chunks it preloads, and its lazy modules, each with its hash. */
async function namedByThePage() {
  const html = await (await fetch(`${stack.origin}/sign-in/`)).text();
  const script = /<script type="module" src="assets\/([^"]+)" integrity="([^"]+)"/.exec(html);
  assert.ok(script);
  const preloads = [...html.matchAll(/<link rel="modulepreload" href="assets\/([^"]+)" integrity="([^"]+)">/g)];
  const modules = /<meta name="modules" content="([^"]+)">/.exec(html)?.[1] ?? '';
  const enrolment = /(?:^|, )enrolment assets\/(\S+) (sha384-\S+?)(?:,|$)/.exec(modules);
  assert.ok(enrolment, 'the page lists its enrolment module');
  return {
    script: { name: script[1] ?? '', integrity: script[2] ?? '' },
    preloads: preloads.map((found) => ({ name: found[1] ?? '', integrity: found[2] ?? '' })),
    enrolment: { name: enrolment[1] ?? '', integrity: enrolment[2] ?? '' },
  };
}

/** A new page that keeps the names of the sign-in page's files it fetched, and its problems. */
async function recordingPage(locale = 'en-GB') {
  const page = await newDesktopPage(browser, { locale });
  const fetched: string[] = [];
  page.on('request', (request) => {
    const { pathname } = new URL(request.url());
    if (pathname.startsWith('/sign-in/assets/')) fetched.push(pathname.slice('/sign-in/assets/'.length));
  });
  const problems: string[] = [];
  recordProblems(page, problems, { origin: stack.origin, path: '/mfa/' });
  return { page, fetched, problems };
}

async function submitPassword(page: Page, username: string, words = { password: 'Password', go: 'Continue' }) {
  await page.locator('#username').fill(username);
  await page.getByRole('textbox', { name: words.password, exact: true }).fill(PASSWORD);
  await button(page, words.go).click();
}

/** `page` gets the sign-in page's file `name` with a line put in front, which sets globalThis.tampered. */
async function tamperWith(page: Page, name: string) {
  await page.route(`**/sign-in/assets/${name}`, async (route) => {
    const served = await route.fetch();
    await route.fulfill({
      status: 200,
      contentType: 'text/javascript',
      body: `globalThis.tampered = true;\n${await served.text()}`,
    });
  });
}

async function newUser(): Promise<string> {
  const username = `chunks-${++users}`;
  await service.createUser(username, PASSWORD);
  return username;
}

describe('the hosted sign-in’s enrolment, loaded when reached (issue 33)', () => {
  test('every chunk the page names is served as its hash says; the shared one is preloaded with it', async () => {
    const named = await namedByThePage();
    assert.equal(named.preloads.length, 1, 'one chunk shared by the script and the enrolment');
    for (const file of [named.script, ...named.preloads, named.enrolment]) {
      const response = await fetch(`${stack.origin}/sign-in/assets/${file.name}`);
      assert.equal(response.status, 200, file.name);
      assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(sri(Buffer.from(await response.arrayBuffer())), file.integrity, file.name);
    }
  });

  test('a password sign-in fetches the script and the shared chunk, never the enrolment or its texts', async () => {
    const named = await namedByThePage();
    const { page, fetched, problems } = await recordingPage();
    const signIn = await acme.sendToSignIn(page, plainApp, { prompt: 'login' });
    await submitPassword(page, await newUser());
    await signIn.back();
    assert.deepEqual(
      fetched.filter((name) => name.endsWith('.js')).sort(),
      [named.script.name, ...named.preloads.map((file) => file.name)].sort(),
    );
    assert.deepEqual(
      fetched.filter((name) => name.endsWith('.json')),
      [],
      'English needs no catalogue',
    );
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('a German sign-in that must add a factor fetches the enrolment, preloaded with its hash, and the German part of its texts', async () => {
    const named = await namedByThePage();
    const { page, fetched, problems } = await recordingPage('de-DE');
    await acme.sendToSignIn(page, payroll, { prompt: 'login', ui_locales: 'de' });
    await page.getByRole('button', { name: 'Weiter' }).waitFor();
    assert.ok(!fetched.includes(named.enrolment.name), 'not before the step is reached');
    await submitPassword(page, await newUser(), { password: 'Passwort', go: 'Weiter' });
    await page.getByRole('heading', { name: 'Bestätigungsmethode hinzufügen' }).waitFor();
    // Texts of the enrolment's own part, in German.
    await button(page, 'Authenticator-App hinzufügen').waitFor();
    await button(page, 'Abbrechen und zur App zurückkehren').waitFor();
    assert.ok(fetched.includes(named.enrolment.name));
    assert.equal(fetched.filter((name) => /^de\.enrolment-[0-9a-f]+\.json$/.test(name)).length, 1, fetched.join());
    const preload = page.locator(`link[rel="modulepreload"][href$="${named.enrolment.name}"]`);
    assert.equal(await preload.getAttribute('integrity'), named.enrolment.integrity);
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('an English sign-in that must add a factor fetches the enrolment, whose chunk carries its English', async () => {
    const named = await namedByThePage();
    const { page, fetched, problems } = await recordingPage();
    await acme.sendToSignIn(page, payroll, { prompt: 'login' });
    await submitPassword(page, await newUser());
    await page.getByRole('heading', { name: 'Add a way to verify' }).waitFor();
    await page.getByText('Payroll asks for two-step verification.').waitFor();
    await button(page, 'Add an authenticator app').click();
    await page.keyboard.press('Enter');
    await page.locator('#totp-qr svg').waitFor();
    assert.ok(fetched.includes(named.enrolment.name));
    // A reload opens the sign-in at the enrolment (its state says so): loaded again, from the start.
    await page.reload();
    await page.getByRole('heading', { name: 'Add a way to verify' }).waitFor();
    await button(page, 'Add an authenticator app').waitFor();
    assert.deepEqual(
      fetched.filter((name) => name.endsWith('.json')),
      [],
    );
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('an enrolment chunk that fails its hash does not run: the sign-in says something went wrong', async () => {
    const named = await namedByThePage();
    const { page } = await recordingPage();
    await tamperWith(page, named.enrolment.name);
    await acme.sendToSignIn(page, payroll, { prompt: 'login' });
    await submitPassword(page, await newUser());
    await page
      .locator('#sign-in .notice')
      .getByText(/^Something went wrong/)
      .waitFor();
    assert.equal(await page.evaluate('globalThis.tampered'), undefined);
    assert.equal(await page.locator('#enrol').isHidden(), true);
    await page.context().close();
  });

  test('a shared chunk that fails its hash does not run, and neither does the script that imports it', async () => {
    const named = await namedByThePage();
    const { page } = await recordingPage();
    const shared = named.preloads[0]?.name ?? '';
    await tamperWith(page, shared);
    const refused = page.waitForEvent('console', (message) => /integrity/.test(message.text()));
    await acme.sendToSignIn(page, plainApp, { prompt: 'login' });
    await refused;
    assert.equal(await page.evaluate('globalThis.tampered'), undefined);
    assert.equal(await page.locator('#sign-in').isHidden(), true, 'the form never shows');
    await page.context().close();
  });
});
