import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type * as client from 'openid-client';
import { createMailUser } from '../support/mail-users.js';
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
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

/** A code's mail (security notices go to the same address). */
const CODE_MAIL = /verification code is \d{6}/;

// CONTRACT §20, email codes as a second factor (EMAIL_FACTOR=on), over HTTP: codes read back from
// the mail a real SMTP server in this process received; the same rules as SMS codes (§5).

let smtp: SmtpTestServer;
let provider: Provider;
let service: Service;
let config: client.Configuration;

before(async () => {
  smtp = await startSmtpServer();
  provider = await startProvider({ env: { SMTP_URL: smtp.url, EMAIL_FACTOR: 'on' } });
  service = provider.service;
  config = await configOf(provider.issuer, await registerClient(service));
});
after(async () => {
  await provider.close();
  await smtp.close();
});

/** A user whose address an operator gave (verified), or none. */
async function newUser(options: { email?: false } = {}) {
  const { username, email } = await createMailUser(service, nextName('mailer'), PASSWORD, options);
  return { username, email, token: await service.accessToken(username, PASSWORD) };
}

function requestEnrolment(token: string, on: Service = service) {
  return on.call('/mfa/email-factor/request/', { method: 'PUT', token });
}
function verifyEnrolment(token: string, code: string) {
  return service.call('/mfa/email-factor/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

/** A user with email codes on, and the clock past the resend cooldown. */
async function userWithEmailFactor() {
  const user = await newUser();
  await expectStatus(requestEnrolment(user.token), 200);
  await expectStatus(verifyEnrolment(user.token, smtp.lastCodeFor(user.email)), 200);
  service.clock.advance(31);
  return user;
}

const otherCode = (code: string) => (code === '000000' ? '111111' : '000000');

describe('email codes as a second factor: adding them', () => {
  test('off by default: type "email" is refused with a 400 that says how to turn it on', async () => {
    const plain = await startService({ env: { SMTP_URL: smtp.url } });
    try {
      await expectStatus(
        plain.call('/admin/users', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { username: 'off-user', password: PASSWORD, email: 'off-user@mail.example' },
        }),
        201,
      );
      const token = await plain.accessToken('off-user', PASSWORD);
      assert.deepEqual(await expectStatus(plain.call('/mfa/email-factor/', { token }), 200), {
        offered: false,
        email: 'off-user@mail.example',
      });
      const refused = await expectStatus(requestEnrolment(token, plain), 400);
      assert.equal(refused.error, 'invalid_request');
      assert.match(refused.error_description, /EMAIL_FACTOR=on/);
      assert.equal(smtp.mailTo('off-user@mail.example').length, 0);
      const login = await expectStatus(plain.login('off-user', PASSWORD, { mfa_type: 'email' }), 400);
      assert.match(login.error_description, /mfa_type email/);
    } finally {
      await plain.close();
    }
  });

  test('without a verified address: 409 email_not_verified, saying how to add one', async () => {
    const { token } = await newUser({ email: false });
    assert.deepEqual(await expectStatus(service.call('/mfa/email-factor/', { token }), 200), {
      offered: true,
      email: '',
    });
    const refused = await expectStatus(requestEnrolment(token), 409);
    assert.equal(refused.error, 'email_not_verified');
    assert.match(refused.error_description, /PUT \/mfa\/email\/request\//);
  });

  test('a code to the verified address turns them on: challenge_type "email"', async () => {
    const { token, email } = await newUser();
    const started = await expectStatus(requestEnrolment(token), 200);
    assert.deepEqual(started, { enabled: false, challenge_type: '', phone_number: '', email });
    const status = await expectStatus(verifyEnrolment(token, smtp.lastCodeFor(email)), 200);
    assert.deepEqual(status, { enabled: true, challenge_type: 'email', phone_number: '' });
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    assert.deepEqual(
      factors.map((factor: { type: string; name: string }) => [factor.type, factor.name]),
      [['email', 'Email']],
    );
  });

  test('a second request within 30 s is 429 email_cooldown; a wrong code is 400 invalid_mfa_code', async () => {
    const { token, email } = await newUser();
    await expectStatus(requestEnrolment(token), 200);
    const early = await expectStatus(requestEnrolment(token), 429);
    assert.equal(early.error, 'email_cooldown');
    assert.equal(smtp.mailTo(email, CODE_MAIL).length, 1);
    const code = smtp.lastCodeFor(email);
    assert.equal((await expectStatus(verifyEnrolment(token, otherCode(code)), 400)).error, 'invalid_mfa_code');
    await expectStatus(verifyEnrolment(token, code), 200);
  });
});

describe('email codes as a second factor: signing in', () => {
  test('the password grant mails a code; the code gives amr ["pwd","email"] and acr "aal2"', async () => {
    const { username, email } = await userWithEmailFactor();
    const asked = await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(asked.mfa_required, true);
    assert.equal(asked.mfa_type, 'email');
    assert.equal(smtp.mailTo(email, CODE_MAIL).length, 2, 'a code for the sign-in');
    const tokens = await expectStatus(service.login(username, PASSWORD, { mfa_code: smtp.lastCodeFor(email) }), 200);
    const claims = decodeJwt(tokens.access_token);
    assert.deepEqual(claims.amr, ['pwd', 'email']);
    assert.equal(claims.acr, 'aal2');
  });

  test('a code works once; within the cooldown a new sign-in mails nothing and the code sent still works', async () => {
    const { username, email } = await userWithEmailFactor();
    await expectStatus(service.login(username, PASSWORD), 200);
    await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(smtp.mailTo(email, CODE_MAIL).length, 2, 'one mail for both sign-ins');
    const code = smtp.lastCodeFor(email);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 200);
    const again = await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 400);
    assert.equal(again.error, 'invalid_grant');
  });

  test('5 wrong attempts kill the code; a code older than 5 minutes has expired', async () => {
    const { username, email } = await userWithEmailFactor();
    await expectStatus(service.login(username, PASSWORD), 200);
    const code = smtp.lastCodeFor(email);
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      await expectStatus(service.login(username, PASSWORD, { mfa_code: otherCode(code) }), 400);
    }
    service.clock.advance(61); // past the guess budget's wait after 5 failures (CONTRACT §13)
    const dead = await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 400);
    assert.match(dead.error_description, /too many attempts/);
    // The dead code ends the cooldown: the next sign-in mails a fresh one, which expires in 5 minutes.
    await expectStatus(service.login(username, PASSWORD), 200);
    const fresh = smtp.lastCodeFor(email);
    service.clock.advance(5 * 60 + 1);
    const late = await expectStatus(service.login(username, PASSWORD, { mfa_code: fresh }), 400);
    assert.match(late.error_description, /expired/);
  });

  test('of many sign-ins racing with one code, exactly one gets tokens', async () => {
    const { username, email } = await userWithEmailFactor();
    await expectStatus(service.login(username, PASSWORD), 200);
    const code = smtp.lastCodeFor(email);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => service.login(username, PASSWORD, { mfa_code: code })),
    );
    assert.equal(answers.filter((answer) => answer.status === 200).length, 1);
  });

  test('the mfa_token flow: the otp grant takes the code mailed', async () => {
    const { username, email } = await userWithEmailFactor();
    const registered = await expectStatus(
      service.call('/admin/clients', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { name: 'otp', mfa_challenge: 'error' },
      }),
      201,
    );
    const authorization = `Basic ${Buffer.from(`${registered.client_id}:${registered.client_secret}`).toString('base64')}`;
    const grant = (body: Record<string, string>) =>
      service.call('/mfa/oauth2/token/', { method: 'POST', headers: { authorization }, body });
    const challenged = await expectStatus(grant({ grant_type: 'password', username, password: PASSWORD }), 403);
    assert.equal(challenged.mfa_type, 'email');
    const tokens = await expectStatus(
      grant({
        grant_type: 'http://auth0.com/oauth/grant-type/mfa-otp',
        mfa_token: challenged.mfa_token,
        otp: smtp.lastCodeFor(email),
      }),
      200,
    );
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'email']);
  });

  test('the hosted sign-in asks for the code mailed and the app gets amr ["pwd","email"]', async () => {
    const { username, email } = await userWithEmailFactor();
    const request = await authorizationRequest(config);
    const browser = new SignInBrowser(provider.issuer);
    const signIn = await browser.startSignIn(request.url);
    const step = await signIn.password(username, PASSWORD);
    assert.equal(step.step, 'second_factor');
    assert.equal(step.mfa_type, 'email');
    const done = await signIn.secondFactor({ mfa_type: 'email', mfa_code: smtp.lastCodeFor(email) });
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'email']);
    assert.equal(tokens.claims()?.acr, 'aal2');
  });

  test('the codes are stored only as keyed hashes and never logged', async () => {
    const { username, email } = await userWithEmailFactor();
    await expectStatus(service.login(username, PASSWORD), 200);
    const code = smtp.lastCodeFor(email);
    assert.ok(!(await service.dumpDatabase()).includes(`"${code}"`), 'no code in the database');
    await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 200);
    assert.ok(!service.log().includes(code), 'no code in the log');
  });
});

describe('email codes as a second factor: when mail cannot go out', () => {
  test('a sign-in answers 502 mail_unavailable, keeps no code and no cooldown; the next sign-in mails one', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(smtp.url).port) });
    const flaky = await startService({
      env: { SMTP_URL: `smtp://127.0.0.1:${proxy.port}`, EMAIL_FACTOR: 'on', SMTP_TIMEOUT_MS: '2000' },
    });
    try {
      const username = 'flaky-mail';
      const email = `${username}@mail.example`;
      await expectStatus(
        flaky.call('/admin/users', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { username, password: PASSWORD, email },
        }),
        201,
      );
      const token = await flaky.accessToken(username, PASSWORD);
      await expectStatus(requestEnrolment(token, flaky), 200);
      await expectStatus(
        flaky.call('/mfa/email-factor/verify/', { method: 'PUT', token, body: { mfa_code: smtp.lastCodeFor(email) } }),
        200,
      );
      flaky.clock.advance(31);
      await proxy.cut();
      const failed = await expectStatus(flaky.login(username, PASSWORD), 502);
      assert.equal(failed.error, 'mail_unavailable');
      await proxy.restore();
      // Nothing half-done: no cooldown was spent, so the next sign-in mails a code at once.
      const asked = await expectStatus(flaky.login(username, PASSWORD), 200);
      assert.equal(asked.mfa_type, 'email');
      const tokens = await expectStatus(flaky.login(username, PASSWORD, { mfa_code: smtp.lastCodeFor(email) }), 200);
      assert.ok(tokens.access_token);
    } finally {
      await flaky.close();
      await proxy.cut();
    }
  });
});
