import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { configOf, registerClient } from './openid-flow.js';
import type { Service } from './service.js';

// The app of the browser tests that sign people in at the hosted sign-in: openid-client,
// unmodified, whose redirect URI is a small server of the test's own on 127.0.0.1 (a loopback http
// redirect, so that Chromium really lands there); the test reads the code from the URL.

export interface BrowserApp {
  /** The redirect URI of every client the app registers. */
  callback: string;
  /** POST /admin/clients ('Acme web' redirecting to `callback`, plus `body`): openid-client's Configuration of it. */
  register(body?: Record<string, unknown>): Promise<client.Configuration>;
  /**
   * The app sends `page` to sign in (PKCE and state; scope 'openid profile' unless `extra` says
   * otherwise); `back` waits for the browser to land back at the app and exchanges the code there.
   */
  sendToSignIn(
    page: Page,
    config: client.Configuration,
    extra?: Record<string, string>,
  ): Promise<{ back(): ReturnType<typeof client.authorizationCodeGrant> }>;
  close(): Promise<void>;
}

/** The app, for the service at `stack.origin` (started on localhost). */
export async function startBrowserApp(stack: { service: Service; origin: string }): Promise<BrowserApp> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Acme</title><p>Back.</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const callback = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  return {
    callback,
    async register(body = {}) {
      return configOf(stack.origin, await registerClient(stack.service, { redirect_uris: [callback], ...body }));
    },
    async sendToSignIn(page, config, extra = {}) {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: callback,
        scope: 'openid profile',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        ...extra,
      });
      await page.goto(url.toString());
      return {
        async back() {
          await page.waitForURL((current) => current.toString().startsWith(callback));
          return client.authorizationCodeGrant(config, new URL(page.url()), {
            pkceCodeVerifier: verifier,
            expectedState: state,
          });
        },
      };
    },
    close() {
      // Chromium may hold a kept-alive connection open; close() alone would wait for it.
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
