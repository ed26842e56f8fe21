import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import { lastCodeIn } from '../support/fake-provider.js';
import { createMailUserWithSms } from '../support/mail-users.js';
import {
  authorizationRequest,
  configOf,
  createTotpUser,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// CONTRACT §20, recovery when every factor is lost, over HTTP: the password asks, the request
// waits RECOVERY_DELAY (72 h by default; the test clock moves) while the email, the enrolled phone
// and the webhooks are told; any sign-in with a second factor, or the user, cancels it; after the
// delay the password removes every factor and gives tokens.

const DELAY_SECONDS = 259_200;

let provider: Provider;
let service: Service;
let smtp: SmtpTestServer;
let receiver: WebhookReceiver;

before(async () => {
  smtp = await startSmtpServer();
  receiver = await startWebhookReceiver();
  provider = await startProvider({ env: { SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE: 'true' } });
  service = provider.service;
  await expectStatus(
    service.call('/admin/webhooks', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: {
        url: `${receiver.url}/recovery`,
        events: ['mfa.recovery_started', 'mfa.recovery_cancelled', 'mfa.recovery_completed', 'mfa.disabled'],
      },
    }),
    201,
  );
});
after(async () => {
  await provider.close();
  await receiver.close();
  await smtp.close();
});

interface SmsUser {
  userId: string;
  username: string;
  email: string;
  phone: string;
}

/** A user with a verified address (given by an operator) and SMS as the second factor. */
function smsUser(prefix = 'lost'): Promise<SmsUser> {
  return createMailUserWithSms(service, nextName(prefix), PASSWORD);
}

/**
 * Signs in with the password and the SMS code: a sign-in with a second factor. The code is the one
 * this login's SMS carries: the notice of a recovery request asked just before goes out through the
 * outbox, and may reach the number after it.
 */
async function signInWithSms(user: SmsUser) {
  const sentBefore = service.twilio.messages.length;
  await expectStatus(service.login(user.username, PASSWORD), 200);
  const texts = service.twilio.messages
    .slice(sentBefore)
    .filter((message) => message.to === `+${user.phone}` && /\b\d{6}\b/.test(message.body))
    .map((message) => message.body);
  const tokens = await expectStatus(
    service.login(user.username, PASSWORD, { mfa_code: lastCodeIn(texts, `+${user.phone}`) }),
    200,
  );
  service.clock.advance(31);
  return tokens;
}

function ask(username: string, password = PASSWORD) {
  return service.call('/mfa/recovery-request/', { method: 'POST', body: { username, password } });
}
function complete(username: string, password = PASSWORD) {
  return service.call('/mfa/recovery-request/complete/', { method: 'POST', body: { username, password } });
}
function stateOf(token: string) {
  return expectStatus(service.call('/mfa/recovery-request/', { token }), 200);
}

/**
 * The recovery webhooks received about `userId`. Read, not verified: their timestamps follow the
 * test clock, days ahead, which receivers' libraries refuse (webhooks.test.ts verifies signatures).
 */
function payloadsAbout(userId: string): { type: string; data: Record<string, string> }[] {
  return receiver
    .at('/recovery')
    .map((webhook) => JSON.parse(webhook.body))
    .filter((payload) => payload.data.user_id === userId);
}
const webhooksAbout = (userId: string) => payloadsAbout(userId).map((payload) => payload.type);

async function eventsOf(userId: string): Promise<{ type: string; outcome: string }[]> {
  return (await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200)).events;
}

describe('asking for recovery', () => {
  test('the password asks: 202 waiting until RECOVERY_DELAY from now; a second request answers the one waiting', async () => {
    const user = await smsUser();
    const asked = await expectStatus(ask(user.username), 202);
    assert.equal(asked.state, 'waiting');
    const expected = service.clock.now().getTime() + DELAY_SECONDS * 1000;
    assert.ok(Math.abs(Date.parse(asked.ready_at) - expected) < 1000, asked.ready_at);
    service.clock.advance(3600);
    assert.deepEqual(await expectStatus(ask(user.username), 202), asked, 'the same request, not a new one');
  });

  test('every channel is told: a notice by email, an SMS to the enrolled number, the webhook; each step is audited', async () => {
    const user = await smsUser('told');
    const sentBefore = service.twilio.messages.length;
    await expectStatus(ask(user.username), 202);
    const mail = await smtp.waitForMail(user.email, /someone asked to recover your account/);
    assert.match(mail.text, /without its second factors/);
    assert.match(mail.text, /sign in with any of your second factors/);
    const sms = service.twilio.messages.slice(sentBefore).filter((message) => message.to === `+${user.phone}`);
    assert.equal(sms.length, 1, 'one SMS to the enrolled number');
    assert.match(sms[0]?.body ?? '', /someone asked to recover your account/);
    await eventually(() => webhooksAbout(user.userId).includes('mfa.recovery_started'));
    const [started] = payloadsAbout(user.userId);
    assert.ok(Date.parse(started?.data.ready_at ?? '') > service.clock.now().getTime(), 'the webhook says when');
    assert.ok((await eventsOf(user.userId)).some((event) => event.type === 'recovery_started'));
  });

  test("the asker chooses neither the owner's language nor a word of the warning: English, a known browser or none", async () => {
    const user = await smsUser('told-en');
    const sentBefore = service.twilio.messages.length;
    const link = 'https://acme-support.example/cancel-recovery';
    await expectStatus(
      service.call('/mfa/recovery-request/', {
        method: 'POST',
        body: { username: user.username, password: PASSWORD },
        headers: { 'accept-language': 'de', 'user-agent': link },
      }),
      202,
    );
    const mail = await smtp.waitForMail(user.email, /someone asked to recover your account/);
    assert.match(mail.text, /^From: address .*, an unknown browser$/m);
    assert.ok(!mail.text.includes('acme-support'), 'no word of the User-Agent');
    const sms = service.twilio.messages.slice(sentBefore).find((message) => message.to === `+${user.phone}`);
    assert.match(sms?.body ?? '', /someone asked to recover your account/);
  });

  test('at most 3 requests start per account per day, as each texts every enrolled number: then 429 recovery_rate_limited', async () => {
    const user = await smsUser('asked-often');
    const { access_token } = await signInWithSms(user);
    const sentBefore = service.twilio.messages.length;
    for (let round = 0; round < 3; round += 1) {
      await expectStatus(ask(user.username), 202);
      await expectStatus(service.call('/mfa/recovery-request/', { method: 'DELETE', token: access_token }), 204);
    }
    const refused = await ask(user.username);
    assert.equal(refused.status, 429);
    assert.equal(((await refused.json()) as { error: string }).error, 'recovery_rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.equal((await stateOf(access_token)).state, 'cancelled', 'nothing started');
    const texts = () => service.twilio.messages.slice(sentBefore).filter((message) => message.to === `+${user.phone}`);
    await eventually(() => texts().length === 3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(texts().length, 3, 'three recovery SMS, not four');
    service.clock.advance(86_400);
    await expectStatus(ask(user.username), 202);
  });

  test("a wrong password is the password grant's 400 invalid_grant, in the same throttle", async () => {
    const user = await smsUser('guessing');
    for (let attempt = 0; attempt < 5; attempt += 1) {
      assert.equal((await expectStatus(ask(user.username, 'not the password'), 400)).error, 'invalid_grant');
    }
    assert.equal((await expectStatus(ask(user.username), 429)).error, 'login_throttled');
    assert.equal((await expectStatus(service.login(user.username, PASSWORD), 429)).error, 'login_throttled');
    assert.equal((await expectStatus(ask('nobody-at-all', 'not the password'), 400)).error, 'invalid_grant');
    service.clock.advance(16 * 60);
  });

  test('an account without a second factor has nothing to recover: 409 mfa_not_enabled; bad input is 400 naming the field', async () => {
    const username = nextName('plain');
    await service.createUser(username, PASSWORD);
    assert.equal((await expectStatus(ask(username), 409)).error, 'mfa_not_enabled');
    const missing = await expectStatus(
      service.call('/mfa/recovery-request/', { method: 'POST', body: { username } }),
      400,
    );
    assert.equal(missing.error, 'invalid_request');
    assert.match(missing.error_description, /password/);
  });
});

describe('completing it', () => {
  test('before ready_at: 409 recovery_waiting with ready_at; after: tokens, every factor and backup code gone, every other login ended', async () => {
    const user = await smsUser('completed');
    const before = await signInWithSms(user);
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: before.access_token }), 200);
    const { ready_at } = await expectStatus(ask(user.username), 202);

    service.clock.advance(DELAY_SECONDS - 60);
    const early = await complete(user.username);
    assert.equal(early.status, 409);
    assert.ok(Number(early.headers.get('retry-after')) > 0);
    const waiting = (await early.json()) as Record<string, string>;
    assert.equal(waiting.error, 'recovery_waiting');
    assert.equal(waiting.ready_at, ready_at);

    service.clock.advance(61);
    const tokens = await expectStatus(complete(user.username), 200);
    assert.equal(tokens.token_type, 'Bearer');
    const status = await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200);
    assert.equal(status.enabled, false, 'every factor is gone');
    assert.deepEqual(await expectStatus(service.call('/mfa/factors/', { token: tokens.access_token }), 200), {
      factors: [],
    });
    assert.deepEqual(await stateOf(tokens.access_token), { state: 'completed', ready_at });
    // The login from before the recovery has ended.
    const refreshed = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: before.refresh_token },
      }),
      400,
    );
    assert.equal(refreshed.error, 'invalid_grant');
    // The password alone signs in now, and the next complete has nothing to complete.
    await expectStatus(service.login(user.username, PASSWORD), 200);
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');

    await smtp.waitForMail(user.email, /your account was recovered/);
    await eventually(() => webhooksAbout(user.userId).includes('mfa.recovery_completed'));
    const types = (await eventsOf(user.userId)).map((event) => `${event.type}:${event.outcome}`);
    assert.ok(types.includes('recovery_completed:succeeded'));
    assert.ok(types.includes('mfa_disabled:recovered'));
    // Receivers that track MFA on and off see it go off.
    await eventually(() => webhooksAbout(user.userId).includes('mfa.disabled'));
  });

  test('without a request, complete is 409 no_recovery_request', async () => {
    const user = await smsUser('unasked');
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');
  });

  test('of two completions at once, one gets tokens', async () => {
    const user = await smsUser('racing');
    await expectStatus(ask(user.username), 202);
    service.clock.advance(DELAY_SECONDS + 1);
    const answers = await Promise.all(Array.from({ length: 5 }, () => complete(user.username)));
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 409, 409, 409, 409]);
    const completions = (await eventsOf(user.userId)).filter((event) => event.type === 'recovery_completed');
    assert.equal(completions.length, 1);
  });
});

describe('cancelling it', () => {
  test('a password grant with the second factor cancels a waiting request, and every channel is told', async () => {
    const user = await smsUser('cancel-grant');
    await expectStatus(ask(user.username), 202);
    const { access_token } = await signInWithSms(user);
    assert.equal((await stateOf(access_token)).state, 'cancelled');
    service.clock.advance(DELAY_SECONDS + 1);
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');
    await smtp.waitForMail(user.email, /the recovery of your account was cancelled/);
    await eventually(() => webhooksAbout(user.userId).includes('mfa.recovery_cancelled'));
    assert.ok((await eventsOf(user.userId)).some((e) => e.type === 'recovery_cancelled' && e.outcome === 'by_sign_in'));
  });

  test('a sign-in with the second factor racing a completion: never tokens for both (the cancel comes before the tokens)', async () => {
    for (let round = 0; round < 5; round += 1) {
      // An authenticator app: the code is at hand, whatever an SMS provider on a loaded machine does.
      const user = await createTotpUser(service, nextName('cancel-race'));
      await expectStatus(ask(user.username), 202);
      service.clock.advance(DELAY_SECONDS + 1);
      const code = user.code();
      const [signIn, completion] = await Promise.all([
        service.login(user.username, PASSWORD, { mfa_code: code }),
        complete(user.username),
      ]);
      const statuses = [signIn.status, completion.status];
      assert.ok(statuses.includes(200), `round ${round}: one of them wins (${statuses})`);
      assert.notDeepEqual(statuses, [200, 200], `round ${round}`);
    }
  });

  test('finishing a login with the mfa_token cancels it too', async () => {
    const user = await smsUser('cancel-mfa-token');
    const { client_id } = await registerClient(service, { mfa_challenge: 'error', token_endpoint_auth_method: 'none' });
    await expectStatus(ask(user.username), 202);
    const refused = await expectStatus(service.login(user.username, PASSWORD, { client_id }), 403);
    const tokens = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'http://auth0.com/oauth/grant-type/mfa-otp',
          client_id,
          mfa_token: refused.mfa_token,
          otp: service.twilio.lastCodeFor(`+${user.phone}`),
        },
      }),
      200,
    );
    assert.equal((await stateOf(tokens.access_token)).state, 'cancelled');
  });

  test('a sign-in with a second factor at the hosted sign-in (authorization-code flow) cancels it', async () => {
    const user = await createTotpUser(service, nextName('cancel-hosted'));
    await expectStatus(ask(user.username), 202);
    const config: client.Configuration = await configOf(provider.issuer, await registerClient(service));
    const request = await authorizationRequest(config);
    const signIn = await new SignInBrowser(provider.issuer).startSignIn(request.url);
    assert.equal((await signIn.password(user.username, PASSWORD)).step, 'second_factor');
    const done = await signIn.secondFactor({ mfa_code: user.code() });
    assert.ok(done.location, JSON.stringify(done));
    service.clock.advance(DELAY_SECONDS + 1);
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');
  });

  test('DELETE from a login of the user cancels it: 204, and GET shows it cancelled', async () => {
    const user = await smsUser('cancel-delete');
    const { access_token } = await signInWithSms(user);
    assert.deepEqual(await stateOf(access_token), { state: 'none', ready_at: null });
    const { ready_at } = await expectStatus(ask(user.username), 202);
    assert.deepEqual(await stateOf(access_token), { state: 'waiting', ready_at });
    await expectStatus(service.call('/mfa/recovery-request/', { method: 'DELETE', token: access_token }), 204);
    assert.deepEqual(await stateOf(access_token), { state: 'cancelled', ready_at });
    assert.ok((await eventsOf(user.userId)).some((e) => e.type === 'recovery_cancelled' && e.outcome === 'by_user'));
    // A new request may follow a cancelled one.
    assert.equal((await expectStatus(ask(user.username), 202)).state, 'waiting');
    assert.equal((await expectStatus(service.call('/mfa/recovery-request/'), 401)).error, 'invalid_token');
  });

  test("an operator's MFA reset cancels a waiting request: the factors enrolled after it are not removed by it", async () => {
    const user = await smsUser('cancel-reset');
    await expectStatus(ask(user.username), 202);
    await expectStatus(service.call(`/admin/users/${user.userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
    const token = await service.accessToken(user.username, PASSWORD);
    assert.equal((await stateOf(token)).state, 'cancelled');
    await service.enrolSms(token, nextPhone());
    service.clock.advance(DELAY_SECONDS + 1);
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');
    const signIn = await expectStatus(service.login(user.username, PASSWORD), 200);
    assert.equal(signIn.mfa_required, true, 'the factor enrolled after the reset stays');
    const cancelled = (await eventsOf(user.userId)).filter((e) => e.type === 'recovery_cancelled');
    assert.deepEqual(
      cancelled.map((e) => e.outcome),
      ['by_operator'],
    );
  });

  test("the user's own DELETE /mfa/ cancels a waiting request too", async () => {
    const user = await smsUser('cancel-disable');
    const { access_token } = await signInWithSms(user);
    await expectStatus(ask(user.username), 202);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token: access_token }), 204);
    assert.equal((await stateOf(access_token)).state, 'cancelled');
    service.clock.advance(DELAY_SECONDS + 1);
    assert.equal((await expectStatus(complete(user.username), 409)).error, 'no_recovery_request');
    assert.ok((await eventsOf(user.userId)).some((e) => e.type === 'recovery_cancelled' && e.outcome === 'by_user'));
  });

  test('the metrics count each step', async () => {
    const text = await (await service.call('/metrics')).text();
    for (const step of ['started', 'cancelled', 'completed']) {
      assert.match(text, new RegExp(`^mfa_recovery_requests_total\\{step="${step}"\\} [1-9]`, 'm'), step);
    }
  });
});
