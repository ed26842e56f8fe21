// "Remember this device" (CONTRACT §19) through the hosted sign-in's API, as the page calls it: the
// offer follows the client's remember_device_days; a remembered browser skips the second step at
// aal2 (never phr), for its user only, for the days the app allows; the account lists and forgets
// devices; CONTRACT §14's changes forget them all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import {
  authorizationRequest,
  configOf,
  createTotpUser,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { type SignInApi, SignInBrowser } from '../support/sign-in-browser.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const CHROME_ON_LINUX =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
const DEVICE_COOKIE = 'mfa-device';

let provider: Provider;
let service: Service;
let issuer: string;
/** An app that lets browsers skip the second step for 30 days, and one that never does. */
let remembering: client.Configuration;
let forgetful: client.Configuration;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  issuer = provider.issuer;
  remembering = await configOf(issuer, await registerClient(service, { remember_device_days: 30 }));
  forgetful = await configOf(issuer, await registerClient(service));
});
after(() => provider.close());

type TotpUser = Awaited<ReturnType<typeof createTotpUser>>;

/** A new sign-in (prompt=login: the browser's sign-in session is not enough) in `browser`. */
async function openSignIn(browser: SignInBrowser, config = remembering, extra: Record<string, string> = {}) {
  const request = await authorizationRequest(config, { prompt: 'login', ...extra });
  return { request, signIn: await browser.startSignIn(request.url) };
}

/** The second step, from Chrome on Linux, asking to remember the browser or not. */
async function secondStep(signIn: SignInApi, body: Record<string, unknown>) {
  const response = await signIn.send('POST', 'second-factor', body, { 'user-agent': CHROME_ON_LINUX });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return { answer: JSON.parse(text), setCookie: response.headers.getSetCookie() };
}

/** Signs `user` in with the password and their app's code, ticking "this device"; answers the app's tokens. */
async function rememberedSignIn(browser: SignInBrowser, user: TotpUser, config = remembering) {
  const { request, signIn } = await openSignIn(browser, config);
  const second = await signIn.password(user.username, PASSWORD);
  assert.equal(second.step, 'second_factor');
  const { answer } = await secondStep(signIn, { mfa_code: user.code(), remember_device: true });
  assert.ok(answer.location, JSON.stringify(answer));
  return exchange(config, answer.location, request);
}

/** The password step in `browser`: the redirect back when the second step was skipped, else the step. */
async function passwordOnly(browser: SignInBrowser, user: TotpUser, config = remembering) {
  const { request, signIn } = await openSignIn(browser, config);
  const answer = await signIn.password(user.username, PASSWORD);
  return { answer, request, signIn };
}

async function devicesOf(token: string) {
  return (await expectStatus(service.call('/mfa/devices/', { token }), 200)).devices;
}

describe('remembering a device at the hosted sign-in (CONTRACT §19)', () => {
  test('an app without remember_device_days offers nothing, and a browser that asks anyway is not remembered', async () => {
    const user = await createTotpUser(service, nextName('forgetful'));
    const browser = new SignInBrowser(issuer);
    const { signIn } = await openSignIn(browser, forgetful);
    const second = await signIn.password(user.username, PASSWORD);
    assert.equal(second.step, 'second_factor');
    assert.equal(second.remember_device_days, undefined, 'no offer');
    const { answer, setCookie } = await secondStep(signIn, { mfa_code: user.code(), remember_device: true });
    assert.ok(answer.location);
    assert.ok(!setCookie.some((cookie) => cookie.startsWith(`${DEVICE_COOKIE}=`)), 'no device cookie');
    assert.equal((await passwordOnly(browser, user, forgetful)).answer.step, 'second_factor');
  });

  test('ticked: an HttpOnly cookie for 30 days, stored hashed; the next password sign-in there skips the second step with amr pwd otp and acr aal2', async () => {
    const user = await createTotpUser(service, nextName('remembered'));
    const browser = new SignInBrowser(issuer);
    const { request, signIn } = await openSignIn(browser);
    const second = await signIn.password(user.username, PASSWORD);
    assert.equal(second.remember_device_days, 30, 'the step offers the app’s days');
    const { answer, setCookie } = await secondStep(signIn, { mfa_code: user.code(), remember_device: true });
    const cookie = setCookie.find((header) => header.startsWith(`${DEVICE_COOKIE}=`));
    assert.ok(cookie, 'a device cookie');
    assert.match(cookie, /; HttpOnly/i);
    assert.match(cookie, /; SameSite=Lax/i);
    assert.match(cookie, /; Path=\//);
    const expires = new Date(/Expires=([^;]+)/i.exec(cookie)?.[1] ?? '').getTime();
    const days = (expires - service.clock.now().getTime()) / 86_400_000;
    assert.ok(days > 29.9 && days <= 30, `the cookie lasts ${days} days`);
    const token = browser.cookies.get(DEVICE_COOKIE) ?? '';
    assert.ok(token.length >= 43, 'at least 256 random bits');
    assert.ok(!(await service.dumpDatabase()).includes(token), 'the device token is stored hashed');
    const first = await exchange(remembering, answer.location, request);
    assert.equal(first.claims()?.acr, 'aal2');

    const later = await passwordOnly(browser, user);
    assert.ok(later.answer.location, `the second step was asked: ${JSON.stringify(later.answer)}`);
    const tokens = await exchange(remembering, later.answer.location, later.request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    assert.equal(tokens.claims()?.acr, 'aal2');
    // The access token says the same, and its refresh keeps it.
    const refreshed = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token ?? '',
          client_id: remembering.clientMetadata().client_id,
          client_secret: String(remembering.clientMetadata().client_secret),
        }).toString(),
      }),
      200,
    );
    const claims = JSON.parse(Buffer.from(refreshed.access_token.split('.')[1], 'base64url').toString());
    assert.equal(claims.acr, 'aal2');
  });

  test('not ticked: no cookie, and the next sign-in asks again', async () => {
    const user = await createTotpUser(service, nextName('unticked'));
    const browser = new SignInBrowser(issuer);
    const { signIn } = await openSignIn(browser);
    await signIn.password(user.username, PASSWORD);
    const { setCookie } = await secondStep(signIn, { mfa_code: user.code() });
    assert.ok(!setCookie.some((cookie) => cookie.startsWith(`${DEVICE_COOKIE}=`)));
    assert.equal((await passwordOnly(browser, user)).answer.step, 'second_factor');
  });

  test('the remembered browser only: another browser, and another user in the same browser, are asked for the second step', async () => {
    const user = await createTotpUser(service, nextName('owner'));
    const other = await createTotpUser(service, nextName('sibling'));
    const browser = new SignInBrowser(issuer);
    await rememberedSignIn(browser, user);
    assert.equal((await passwordOnly(new SignInBrowser(issuer), user)).answer.step, 'second_factor');
    assert.equal((await passwordOnly(browser, other)).answer.step, 'second_factor');
    // The cookie's token copied to another browser works there: the cookie is the device. Without
    // the password, though, it proves nothing.
    const { signIn } = await openSignIn(browser);
    assert.equal((await signIn.password(user.username, 'not the password', 400)).error, 'invalid_grant');
  });

  test('a device remembered after a passkey still gives acr aal2, never phr; a request for phr asks for the passkey', async () => {
    const user = await createTotpUser(service, nextName('keyholder'));
    const authenticator = new SoftAuthenticator();
    const token = await service.accessToken(user.username, PASSWORD, { mfa_code: user.code() });
    const { options } = await expectStatus(
      service.call('/mfa/webauthn/request/', { method: 'PUT', token, body: { name: 'Key' } }),
      200,
    );
    await expectStatus(
      service.call('/mfa/webauthn/verify/', {
        method: 'PUT',
        token,
        body: { credential: authenticator.register(options, issuer), name: 'Key' },
      }),
      200,
    );
    const browser = new SignInBrowser(issuer);
    const { request, signIn } = await openSignIn(browser, remembering, { acr_values: 'phr' });
    const second = await signIn.password(user.username, PASSWORD);
    assert.equal(second.mfa_type, 'webauthn');
    const { answer } = await secondStep(signIn, {
      mfa_type: 'webauthn',
      webauthn_response: authenticator.assert(second.webauthn, issuer),
      remember_device: true,
    });
    assert.equal((await exchange(remembering, answer.location, request)).claims()?.acr, 'phr');

    const later = await passwordOnly(browser, user);
    assert.ok(later.answer.location);
    const tokens = await exchange(remembering, later.answer.location, later.request);
    assert.equal(tokens.claims()?.acr, 'aal2');
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'hwk']);

    const phr = await openSignIn(browser, remembering, { acr_values: 'phr' });
    const asked = await phr.signIn.password(user.username, PASSWORD);
    assert.equal(asked.step, 'second_factor', 'the remembered device does not stand for a passkey now');
    assert.equal(asked.mfa_type, 'webauthn');
  });

  test('each app counts its own days: an app allowing 5 asks again after 6, the one allowing 30 does not; after 30 both ask', async () => {
    const user = await createTotpUser(service, nextName('days'));
    const shortly = await configOf(issuer, await registerClient(service, { remember_device_days: 5 }));
    const browser = new SignInBrowser(issuer);
    await rememberedSignIn(browser, user);
    service.clock.advance(6 * 86_400);
    assert.equal((await passwordOnly(browser, user, shortly)).answer.step, 'second_factor');
    assert.ok((await passwordOnly(browser, user)).answer.location);
    service.clock.advance(25 * 86_400);
    assert.equal((await passwordOnly(browser, user)).answer.step, 'second_factor');
  });
});

describe('the account’s remembered devices (GET and DELETE /mfa/devices/)', () => {
  test('listed with the browser and its first and last use; forgetting one makes its browser ask again', async () => {
    const user = await createTotpUser(service, nextName('lister'));
    const browser = new SignInBrowser(issuer);
    const tokens = await rememberedSignIn(browser, user);
    const [device, ...others] = await devicesOf(tokens.access_token);
    assert.deepEqual(others, []);
    assert.equal(device.browser, 'Chrome on Linux');
    assert.equal(device.created_at, device.last_used_at);
    service.clock.advance(60);
    await passwordOnly(browser, user);
    const [used] = await devicesOf(tokens.access_token);
    assert.ok(used.last_used_at > device.last_used_at, 'the skip counts as a use');

    const stranger = await createTotpUser(service, nextName('stranger'));
    const strangerToken = await service.accessToken(stranger.username, PASSWORD, { mfa_code: stranger.code() });
    const refused = await expectStatus(
      service.call(`/mfa/devices/${device.id}/`, { method: 'DELETE', token: strangerToken }),
      404,
    );
    assert.match(refused.error_description, /GET \/mfa\/devices\//);
    assert.equal((await devicesOf(tokens.access_token)).length, 1, 'another user cannot forget it');

    await expectStatus(
      service.call(`/mfa/devices/${device.id}/`, { method: 'DELETE', token: tokens.access_token }),
      204,
    );
    assert.deepEqual(await devicesOf(tokens.access_token), []);
    assert.equal((await passwordOnly(browser, user)).answer.step, 'second_factor');
    const { events } = await expectStatus(
      service.call(`/admin/users/${user.userId}/events`, { token: ADMIN_TOKEN }),
      200,
    );
    const types = events.map((event: { type: string }) => event.type);
    assert.ok(types.includes('device_remembered') && types.includes('device_forgotten'), `events: ${types}`);
  });

  test('adding a factor (CONTRACT §14) forgets every device of the user', async () => {
    const user = await createTotpUser(service, nextName('changer'));
    const browser = new SignInBrowser(issuer);
    await rememberedSignIn(browser, user);
    const token = await service.accessToken(user.username, PASSWORD, { mfa_code: user.code() });
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    await expectStatus(
      service.call('/mfa/totp/verify/', {
        method: 'PUT',
        token,
        body: { mfa_code: app.generate({ timestamp: service.clock.now().getTime() }) },
      }),
      200,
    );
    assert.deepEqual(await devicesOf(token), []);
    assert.equal((await passwordOnly(browser, user)).answer.step, 'second_factor');
  });
});
