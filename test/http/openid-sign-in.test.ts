// The hosted sign-in's API (CONTRACT §18), as the page calls it: its protections (CSRF, the
// browser it belongs to, single use, the password grant's throttles and guess budget), cancelling,
// adding a second factor when the client or the request asks for more than the user has, and
// what a sign-in leaves in the audit trail and the metrics.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import {
  authorizationRequest,
  CALLBACK,
  configOf,
  createTotpUser,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  paramsOf,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { type SignInApi, SignInBrowser } from '../support/sign-in-browser.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

let provider: Provider;
let service: Service;
let issuer: string;
let config: client.Configuration;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  issuer = provider.issuer;
  config = await configOf(issuer, await registerClient(service));
});
after(() => provider.close());

/** A user without a second factor. */
async function plainUser(prefix = 'signer') {
  const username = nextName(prefix);
  const userId = await service.createUser(username, PASSWORD);
  return { username, userId };
}

/** A sign-in opened for `config`'s client (or another), with the request that opened it. */
async function openSignIn(configuration = config, extra: Record<string, string> = {}) {
  const request = await authorizationRequest(configuration, extra);
  const browser = new SignInBrowser(issuer);
  const signIn = await browser.startSignIn(request.url);
  return { request, browser, signIn };
}

/** A POST to the sign-in API as `signIn`'s browser, with the headers given and no others. */
async function rawPost(signIn: SignInApi, path: string, body: unknown, headers: Record<string, string>) {
  const response = await signIn.browser.request(`${issuer}/mfa/oauth2/sign-in/${signIn.id}/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** The sign-in as its page would read it now (GET). */
async function look(signIn: SignInApi, browser = signIn.browser) {
  const response = await browser.request(`${issuer}/mfa/oauth2/sign-in/${signIn.id}/`);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('the sign-in API is answered to its own page only', () => {
  test('a POST without the X-CSRF-Token header, or with a wrong one, is 403 csrf_check_failed and is not judged', async () => {
    const { username } = await plainUser();
    const { request, signIn } = await openSignIn();
    const missingOrWrong: Record<string, string>[] = [
      { origin: issuer },
      { origin: issuer, 'x-csrf-token': `${signIn.csrfToken}x` },
      {},
    ];
    for (const headers of missingOrWrong) {
      // Wrong passwords, six times: were they judged, the username would be throttled.
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const refused = await rawPost(signIn, 'password', { username, password: 'wrong password' }, headers);
        assert.equal(refused.status, 403);
        assert.equal(refused.body.error, 'csrf_check_failed');
      }
    }
    const right = await rawPost(signIn, 'password', { username, password: PASSWORD }, { origin: issuer });
    assert.equal(right.status, 403, 'not even the right password passes without the token');
    assert.equal((await look(signIn)).body.step, 'password', 'nothing changed');
    const done = await signIn.password(username, PASSWORD);
    assert.ok((await exchange(config, done.location, request)).access_token);
  });

  test('a POST from another Origin is 403 csrf_check_failed, even with the token; cancelling from there does nothing', async () => {
    const { username } = await plainUser();
    const { request, signIn } = await openSignIn();
    for (const origin of ['https://evil.example.com', 'null', `${issuer}.evil.example.com`]) {
      const headers = { origin, 'x-csrf-token': signIn.csrfToken };
      const password = await rawPost(signIn, 'password', { username, password: PASSWORD }, headers);
      assert.deepEqual([password.status, password.body.error], [403, 'csrf_check_failed'], origin);
      const cancel = await rawPost(signIn, 'cancel', {}, headers);
      assert.deepEqual([cancel.status, cancel.body.error], [403, 'csrf_check_failed'], origin);
    }
    assert.equal((await look(signIn)).body.step, 'password');
    const done = await signIn.password(username, PASSWORD);
    assert.ok((await exchange(config, done.location, request)).access_token);
  });

  test('another browser (no cookie, or its own) gets 410 sign_in_expired for this sign-in, page and steps', async () => {
    const { username } = await plainUser();
    const { signIn } = await openSignIn();
    const stranger = new SignInBrowser(issuer);
    const other = await openSignIn();
    for (const browser of [stranger, other.browser]) {
      const seen = await look(signIn, browser);
      assert.deepEqual([seen.status, seen.body.error], [410, 'sign_in_expired']);
      const response = await browser.request(`${issuer}/mfa/oauth2/sign-in/${signIn.id}/password`, {
        method: 'POST',
        body: JSON.stringify({ username, password: PASSWORD }),
        headers: { 'content-type': 'application/json', origin: issuer, 'x-csrf-token': signIn.csrfToken },
      });
      assert.equal(response.status, 410);
      await response.body?.cancel();
    }
    assert.equal((await look(signIn)).body.step, 'password', 'its own browser still has it');
    const unknown = await new SignInBrowser(issuer).request(`${issuer}/mfa/oauth2/sign-in/no-such-sign-in/`);
    assert.equal(unknown.status, 410);
    await unknown.body?.cancel();
  });

  test('a finished sign-in cannot be used again: its page and every step answer 410', async () => {
    const { username } = await plainUser();
    const { signIn } = await openSignIn();
    await signIn.password(username, PASSWORD);
    assert.equal((await look(signIn)).status, 410);
    assert.equal((await signIn.password(username, PASSWORD, 410)).error, 'sign_in_expired');
    assert.equal((await signIn.expect('POST', 'second-factor', { mfa_code: '123456' }, 410)).error, 'sign_in_expired');
    assert.equal((await signIn.expect('POST', 'cancel', {}, 410)).error, 'sign_in_expired');
  });

  test('a sign-in left open for more than 30 minutes has expired', async () => {
    const { username } = await plainUser();
    const { signIn } = await openSignIn();
    service.clock.advance(31 * 60);
    assert.equal((await look(signIn)).status, 410);
    assert.equal((await signIn.password(username, PASSWORD, 410)).error, 'sign_in_expired');
  });

  test('cancel sends the browser back to the app with error=access_denied, state and iss; the sign-in is over', async () => {
    const { request, signIn } = await openSignIn();
    const { location } = await signIn.cancel();
    assert.ok(location.startsWith(`${CALLBACK}?`), location);
    const back = paramsOf(location);
    assert.equal(back.error, 'access_denied');
    assert.equal(back.state, request.state);
    assert.equal(back.iss, issuer);
    assert.equal(back.code, undefined);
    assert.equal((await look(signIn)).status, 410);
  });
});

describe('guessing at the hosted sign-in counts where the password grant counts (CONTRACT §13)', () => {
  test('wrong passwords for one username, at the sign-in and at the password grant, share one throttle: after 5, both answer 429 login_throttled', async () => {
    const { username } = await plainUser('throttled');
    const { signIn } = await openSignIn();
    for (let attempt = 0; attempt < 3; attempt += 1) {
      assert.equal((await signIn.password(username, `wrong ${attempt}`, 400)).error, 'invalid_grant');
    }
    for (let attempt = 3; attempt < 5; attempt += 1) {
      assert.equal((await expectStatus(service.login(username, `wrong ${attempt}`), 400)).error, 'invalid_grant');
    }
    const atTheSignIn = await signIn.send('POST', 'password', { username, password: PASSWORD });
    assert.equal(atTheSignIn.status, 429);
    assert.ok(Number(atTheSignIn.headers.get('retry-after')) >= 1);
    assert.equal(((await atTheSignIn.json()) as { error: string }).error, 'login_throttled');
    assert.equal((await expectStatus(service.login(username, PASSWORD), 429)).error, 'login_throttled');
    // Failures are forgotten after 15 minutes (and the address's count with them, for the next tests).
    service.clock.advance(16 * 60);
    await signIn.password(username, PASSWORD);
  });

  test('wrong second-factor codes, at the sign-in and at the password grant, share one guess budget: after 5, both answer 429 mfa_throttled', async () => {
    const user = await createTotpUser(service, nextName('guesser'));
    const { signIn } = await openSignIn();
    assert.equal((await signIn.password(user.username, PASSWORD)).step, 'second_factor');
    for (let attempt = 0; attempt < 3; attempt += 1) {
      assert.equal((await signIn.secondFactor({ mfa_code: user.wrongCode() }, 400)).error, 'invalid_grant');
    }
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const answer = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: user.wrongCode() }), 400);
      assert.equal(answer.error, 'invalid_grant');
    }
    // The right code now, and the clock where it is: the wait (60 s) has not passed.
    const atTheSignIn = await signIn.send('POST', 'second-factor', { mfa_code: user.currentCode() });
    assert.equal(atTheSignIn.status, 429);
    assert.ok(Number(atTheSignIn.headers.get('retry-after')) >= 1);
    assert.equal(((await atTheSignIn.json()) as { error: string }).error, 'mfa_throttled');
    const atTheGrant = await expectStatus(
      service.login(user.username, PASSWORD, { mfa_code: user.currentCode() }),
      429,
    );
    assert.equal(atTheGrant.error, 'mfa_throttled');
  });
});

describe('adding a second factor during the sign-in', () => {
  let strict: client.Configuration;
  before(async () => {
    strict = await configOf(issuer, await registerClient(service, { name: 'Strict app', mfa_policy: 'required' }));
  });

  test('mfa_policy required: a user without a factor is taken to add one; an authenticator app gives the app amr pwd+otp', async () => {
    const { username } = await plainUser('enrolling');
    const { request, signIn } = await openSignIn(strict);
    const enrol = await signIn.password(username, PASSWORD);
    assert.equal(enrol.step, 'enrol');
    assert.equal(enrol.username, username);
    assert.ok(enrol.factor_types.includes('totp') && enrol.factor_types.includes('webauthn'), enrol.factor_types);
    // The enrolment calls are the sign-in's: the page's CSRF token, its origin.
    const forged = await rawPost(
      signIn,
      'cancel',
      {},
      { origin: 'https://evil.example.com', 'x-csrf-token': signIn.csrfToken },
    );
    assert.equal(forged.status, 403);
    const started = await signIn.expect('PUT', 'totp/request/', { name: 'Phone' }, 200);
    assert.ok(started.factor_id && started.secret);
    const app = OTPAuth.URI.parse(started.otpauth_uri) as OTPAuth.TOTP;
    const code = () => app.generate({ timestamp: service.clock.now().getTime() });
    const wrong = await signIn.expect(
      'PUT',
      'totp/verify/',
      { mfa_code: code() === '000000' ? '000001' : '000000' },
      400,
    );
    assert.equal(wrong.error, 'invalid_mfa_code');
    const done = await signIn.expect('PUT', 'totp/verify/', { mfa_code: code() }, 200);
    const tokens = await exchange(strict, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    assert.equal(tokens.claims()?.acr, 'aal2');
    const status = await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200);
    assert.deepEqual(status, { enabled: true, challenge_type: 'totp', phone_number: '' });
  });

  test('mfa_policy required: leaving the step to add a factor sends the app error=unmet_authentication_requirements', async () => {
    const { username } = await plainUser('leaving');
    const { request, signIn } = await openSignIn(strict);
    assert.equal((await signIn.password(username, PASSWORD)).step, 'enrol');
    const { location } = await signIn.cancel();
    const back = paramsOf(location);
    assert.equal(back.error, 'unmet_authentication_requirements');
    assert.equal(back.state, request.state);
    assert.equal(back.iss, issuer);
  });

  test('mfa_policy optional: the steps to add a factor are refused when the sign-in does not ask for one', async () => {
    const user = await plainUser('optional');
    const { signIn } = await openSignIn();
    assert.equal((await signIn.expect('PUT', 'totp/request/', {}, 400)).error, 'invalid_request');
    assert.ok((await signIn.password(user.username, PASSWORD)).location);
  });

  test('acr_values=phr for a user with only an authenticator app: the code first, then a passkey alone is offered, and adding it gives acr phr', async () => {
    const user = await createTotpUser(service, nextName('phr'));
    const { request, signIn } = await openSignIn(config, { acr_values: 'phr' });
    const second = await signIn.password(user.username, PASSWORD);
    assert.equal(second.step, 'second_factor');
    assert.equal(second.mfa_type, 'totp');
    assert.equal(second.username, user.username);
    const enrol = await signIn.secondFactor({ mfa_code: user.code() });
    assert.equal(enrol.step, 'enrol');
    assert.deepEqual(enrol.factor_types, ['webauthn']);
    assert.equal((await signIn.expect('PUT', 'totp/request/', {}, 400)).error, 'invalid_request');
    const { options } = await signIn.expect('PUT', 'webauthn/request/', { name: 'Laptop' }, 200);
    const authenticator = new SoftAuthenticator();
    const done = await signIn.expect(
      'PUT',
      'webauthn/verify/',
      { credential: authenticator.register(options, issuer), name: 'Laptop' },
      200,
    );
    const tokens = await exchange(config, done.location, request);
    assert.equal(tokens.claims()?.acr, 'phr');
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp', 'hwk']);
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: tokens.access_token }), 200);
    assert.deepEqual(factors.map((factor: { type: string }) => factor.type).sort(), ['totp', 'webauthn']);
  });
});

describe('what a sign-in leaves behind', () => {
  test('a code-flow sign-in is an audit login succeeded event and counts in mfa_sign_ins_total{flow="authorization_code"}', async () => {
    const counted = async () => {
      const text = await (await service.call('/metrics')).text();
      const line = text
        .split('\n')
        .find((entry) => entry.startsWith('mfa_sign_ins_total{flow="authorization_code",amr="pwd"}'));
      return Number(line?.split(' ').pop() ?? 0);
    };
    const before = await counted();
    const { username, userId } = await plainUser('audited');
    const { request, signIn, browser } = await openSignIn();
    const done = await signIn.password(username, PASSWORD);
    await exchange(config, done.location, request);
    assert.equal(await counted(), before + 1);
    // A second app answered from the sign-in session is a sign-in too.
    const again = await authorizationRequest(config);
    assert.ok('back' in (await browser.authorize(again.url)));
    assert.equal(await counted(), before + 2);

    const { events } = await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
    const logins = events.filter(
      (event: { type: string; outcome: string }) => event.type === 'login' && event.outcome === 'succeeded',
    );
    assert.equal(logins.length, 2);
    for (const event of logins) assert.equal(event.detail.flow, 'authorization_code');
    assert.deepEqual(logins.map((event: { detail: { via: string } }) => event.detail.via).sort(), [
      'hosted_page',
      'sign_in_session',
    ]);
  });
});
