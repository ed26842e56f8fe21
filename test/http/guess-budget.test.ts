import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

let userCount = 0;

/** A user with SMS MFA on, ten backup codes, and the clock past the cooldown. */
async function mfaUser() {
  const phone = nextPhone();
  const user = await service.createUserWithMfa(`guess-${++userCount}`, PASSWORD, phone);
  const backup: string[] = (
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: user.token }), 200)
  ).backup_codes;
  return { ...user, e164: `+${phone}`, backup };
}

/** A 6-digit code that is not `code`. */
function otherCode(code: string) {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

const WRONG_BACKUP = '000000000000';

/** Asks for a login code and returns it. */
async function loginCode(username: string, e164: string) {
  assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), { mfa_required: true, mfa_type: 'sms' });
  return service.twilio.lastCodeFor(e164);
}

async function expectThrottled(pending: Promise<Response>) {
  const response = await pending;
  const body = (await response.json()) as { error: string };
  assert.equal(response.status, 429, JSON.stringify(body));
  assert.equal(body.error, 'mfa_throttled');
  return Number(response.headers.get('retry-after'));
}

describe('one guess budget per user across every second factor (CONTRACT §13)', () => {
  test('of 20 simultaneous wrong codes, at most 5 are judged; the rest answer 429 mfa_throttled with Retry-After', async () => {
    const { username, e164 } = await mfaUser();
    const code = await loginCode(username, e164);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => service.login(username, PASSWORD, { mfa_code: otherCode(code) })),
    );
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<{ error: string }>));
    const judged = responses.filter((response) => response.status === 400).length;
    assert.ok(judged >= 1 && judged <= 5, `judged: ${judged}`);
    for (const [index, response] of responses.entries()) {
      if (response.status === 400) continue;
      assert.equal(response.status, 429);
      const error = bodies[index]?.error ?? '';
      assert.ok(['mfa_throttled', 'login_throttled'].includes(error), error);
      assert.ok(Number(response.headers.get('retry-after')) >= 1);
    }
    // Even the right code now waits.
    const wait = await expectThrottled(service.login(username, PASSWORD, { mfa_code: code }));
    assert.ok(wait > 0 && wait <= 60, `Retry-After ${wait}`);
  });

  test('wrong backup codes count: after 5, even the right backup code waits 60 s', async () => {
    const { username, backup } = await mfaUser();
    for (let attempt = 0; attempt < 5; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    assert.equal(await expectThrottled(service.login(username, PASSWORD, { backup_code: backup[0] ?? '' })), 60);
    service.clock.advance(60);
    await expectStatus(service.login(username, PASSWORD, { backup_code: backup[0] ?? '' }), 200);
  });

  test('wrong authenticator-app codes count: after 5, even the right app code waits 60 s', async () => {
    const username = `guess-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    const appCode = () => app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: appCode() } }), 200);
    service.clock.advance(30);
    for (let attempt = 0; attempt < 5; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { mfa_code: otherCode(appCode()) }), 400);
    }
    assert.equal(await expectThrottled(service.login(username, PASSWORD, { mfa_code: appCode() })), 60);
    service.clock.advance(60);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: appCode() }), 200);
  });

  test('SMS codes and backup codes share the budget', async () => {
    const { username, e164, backup } = await mfaUser();
    const code = await loginCode(username, e164);
    for (let attempt = 0; attempt < 3; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { mfa_code: otherCode(code) }), 400);
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    await expectThrottled(service.login(username, PASSWORD, { backup_code: backup[0] ?? '' }));
    await expectThrottled(service.login(username, PASSWORD, { mfa_code: code }));
  });

  test('each further failure doubles the wait, from 60 s up to an hour', async () => {
    const { username } = await mfaUser();
    for (let attempt = 0; attempt < 5; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    const waits: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      const wait = await expectThrottled(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }));
      waits.push(wait);
      service.clock.advance(wait);
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    assert.deepEqual(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600]);
  });

  test('a success starts the run again: 4 wrong, a right one, then 4 more wrong are still judged', async () => {
    const { username, backup } = await mfaUser();
    for (let attempt = 0; attempt < 4; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    await expectStatus(service.login(username, PASSWORD, { backup_code: backup[0] ?? '' }), 200);
    for (let attempt = 0; attempt < 4; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { backup_code: WRONG_BACKUP }), 400);
    }
    await expectStatus(service.login(username, PASSWORD, { backup_code: backup[1] ?? '' }), 200);
  });

  test("the owner's successes do not restore an attacker's day: at most 50 wrong guesses in 24 hours", async () => {
    const { username, e164 } = await mfaUser();
    // The second steps go through the mfa_token grant: one password (one Argon2 run) per login.
    const client = await expectStatus(
      service.call('/admin/clients', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { name: 'guessing client', mfa_challenge: 'error' },
      }),
      201,
    );
    const authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const grant = (body: Record<string, string>) =>
      service.call('/mfa/oauth2/token/', { method: 'POST', headers: { authorization }, body });
    const passwordStep = async () => {
      const { mfa_token: mfaToken } = await expectStatus(
        grant({ grant_type: 'password', username, password: PASSWORD }),
        403,
      );
      return { mfaToken: mfaToken as string, code: service.twilio.lastCodeFor(e164) };
    };
    const otp = (mfaToken: string, code: string) =>
      grant({ grant_type: 'http://auth0.com/oauth/grant-type/mfa-otp', mfa_token: mfaToken, otp: code });

    let failures = 0;
    // The attacker guesses 4 times between each of the owner's logins, which end the run of failures.
    while (failures < 48) {
      service.clock.advance(600); // the owner's hourly SMS allowance is 10
      const { mfaToken, code } = await passwordStep();
      for (let attempt = 0; attempt < 4; attempt++) {
        await expectStatus(otp(mfaToken, otherCode(code)), 400);
        failures += 1;
      }
      await expectStatus(otp(mfaToken, code), 200);
    }
    service.clock.advance(600);
    const { mfaToken, code } = await passwordStep();
    for (let attempt = 0; attempt < 2; attempt++) await expectStatus(otp(mfaToken, otherCode(code)), 400);
    // The fiftieth failure spent the day: the right code waits too, for a day.
    const wait = await expectThrottled(otp(mfaToken, code));
    assert.ok(wait > 3600 && wait <= 86_400, `Retry-After ${wait}`);
    service.clock.advance(wait);
    const fresh = await passwordStep();
    await expectStatus(otp(fresh.mfaToken, fresh.code), 200);
  });
});
