import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureBuilt, launchChromium, newDesktopPage, recordProblems, signInAtHostedPage } from '../support/browser.js';
import { type BrowserApp, startBrowserApp } from '../support/browser-app.js';
import { PASSWORD } from '../support/openid-flow.js';
import { type Service, startService } from '../support/service.js';

// An operator may put the service under a path behind a proxy (ISSUER=https://example.com/auth).
// The authorization endpoint answers with the hosted sign-in at …/auth/mfa/oauth2/authorize/: the
// page must find its files, its API and its own address (…/auth/sign-in/?id=…) under that path.

const PREFIX = '/auth';
let proxy: Server;
let service: Service;
let browser: Browser;
let app: BrowserApp;
let issuer: string;

before(async () => {
  ensureBuilt();
  const upstream = { port: 0 };
  // Strips the prefix and passes everything else on, as a reverse proxy does; anything else is 404.
  proxy = createServer((incoming, outgoing) => {
    if (!incoming.url?.startsWith(`${PREFIX}/`)) {
      outgoing.writeHead(404).end();
      return;
    }
    const forwarded = request(
      {
        host: '127.0.0.1',
        port: upstream.port,
        path: incoming.url.slice(PREFIX.length),
        method: incoming.method,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  issuer = `http://localhost:${(proxy.address() as AddressInfo).port}${PREFIX}`;
  service = await startService({ env: { ISSUER: issuer } });
  upstream.port = Number(new URL(service.url).port);
  browser = await launchChromium();
  app = await startBrowserApp({ service, origin: issuer });
});

after(async () => {
  await browser?.close();
  await app?.close();
  await service?.close();
  proxy?.close();
});

test('under a path prefix the page answered at the authorization endpoint finds its files, its API and its own address, and signs in', async () => {
  const page = await newDesktopPage(browser);
  const problems: string[] = [];
  recordProblems(page, problems);
  const refused: string[] = [];
  page.on('response', (response) => {
    if (response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
  });
  await service.createUser('petra', PASSWORD);
  const signIn = await app.sendToSignIn(page, await app.register({ name: 'Prefixed app' }));
  await page.getByText('Sign in to continue to Prefixed app.').waitFor();
  const address = new URL(page.url());
  assert.equal(address.pathname, `${PREFIX}/sign-in/`);
  // Its files came from under the prefix: the script ran (the text above is its) and nothing failed.
  await page.reload();
  await page.getByText('Sign in to continue to Prefixed app.').waitFor();
  await signInAtHostedPage(page, 'petra');
  const tokens = await signIn.back();
  assert.deepEqual(tokens.claims()?.amr, ['pwd']);
  assert.deepEqual(refused, []);
  assert.deepEqual(problems, []);
});
