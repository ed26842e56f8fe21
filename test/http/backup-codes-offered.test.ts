import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import {
  authorizationRequest,
  configOf,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { expectStatus, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';

// Issue 29: backup codes are offered as soon as the first factor is added. The login that turned
// MFA on proved the new factor as it added it: it may create the first set without signing in
// again, once, within STEP_UP_MAX_AGE; the hosted sign-in's enrolment step answers them itself.

let provider: Provider;
let service: Service;
let strict: client.Configuration;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  strict = await configOf(provider.issuer, await registerClient(service, { name: 'Strict', mfa_policy: 'required' }));
});
after(() => provider.close());

/** A user and their password-only login, which added their first factor, an authenticator app. */
async function addFirstApp() {
  const username = nextName('offered');
  await service.createUser(username, PASSWORD);
  return { username, token: await firstAppLogin(username) };
}

/** `username`'s password-only login, with which an authenticator app is added as the first factor. */
async function firstAppLogin(username: string): Promise<string> {
  const token = await service.accessToken(username, PASSWORD);
  const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
  const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
  const code = app.generate({ timestamp: service.clock.now().getTime() });
  await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code } }), 200);
  return token;
}

const createCodes = (token: string) => service.call('/mfa/recovery/', { method: 'POST', token });

describe('backup codes offered with the first factor', () => {
  test('the login that turned MFA on creates the first set without signing in again, once', async () => {
    const { username, token } = await addFirstApp();
    const { backup_codes: codes } = await expectStatus(createCodes(token), 200);
    assert.equal(codes.length, 10);
    const again = await expectStatus(createCodes(token), 401);
    assert.equal(again.error, 'insufficient_user_authentication', 'a second set needs the second factor');
    const signedIn = await expectStatus(service.login(username, PASSWORD, { backup_code: codes[0] }), 200);
    assert.ok(signedIn.access_token, 'the codes work');
  });

  test('later than STEP_UP_MAX_AGE after MFA went on, even the first set needs the second factor', async () => {
    const { token } = await addFirstApp();
    service.clock.advance(service.config.stepUpMaxAgeSeconds + 1);
    assert.equal((await expectStatus(createCodes(token), 401)).error, 'insufficient_user_authentication');
  });

  test('the hosted sign-in that adds the first factor answers the first backup codes with the redirect', async () => {
    const username = nextName('hosted');
    await service.createUser(username, PASSWORD);
    const request = await authorizationRequest(strict);
    const signIn = await new SignInBrowser(provider.issuer).startSignIn(request.url);
    assert.equal((await signIn.password(username, PASSWORD)).step, 'enrol');
    const started = await signIn.expect('PUT', 'totp/request/', { name: 'Phone' }, 200);
    const app = OTPAuth.URI.parse(started.otpauth_uri) as OTPAuth.TOTP;
    const done = await signIn.expect(
      'PUT',
      'totp/verify/',
      { mfa_code: app.generate({ timestamp: service.clock.now().getTime() }) },
      200,
    );
    assert.equal(done.backup_codes.length, 10);
    await exchange(strict, done.location, request);
    const signedIn = await expectStatus(service.login(username, PASSWORD, { backup_code: done.backup_codes[9] }), 200);
    assert.ok(signedIn.access_token);
    const left = await expectStatus(service.call('/mfa/recovery/', { token: signedIn.access_token }), 200);
    assert.equal(left.remaining, 9, 'an API client learns how many are left from GET /mfa/recovery/');
  });

  test('a hosted sign-in with a backup code answers how many are left, for the page to say', async () => {
    const username = nextName('spender');
    await service.createUser(username, PASSWORD);
    const { backup_codes: codes } = await expectStatus(createCodes(await firstAppLogin(username)), 200);
    const request = await authorizationRequest(strict);
    const signIn = await new SignInBrowser(provider.issuer).startSignIn(request.url);
    assert.equal((await signIn.password(username, PASSWORD)).step, 'second_factor');
    const done = await signIn.secondFactor({ backup_code: codes[3] });
    assert.equal(done.backup_codes_left, 9);
    await exchange(strict, done.location, request);
  });
});
