import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

let userCount = 0;
async function mfaUser() {
  return service.createUserWithMfa(`backup-${++userCount}`, PASSWORD, nextPhone());
}

function regenerate(token: string) {
  return service.call('/mfa/recovery/', { method: 'POST', token });
}

function remaining(token: string) {
  return service.call('/mfa/recovery/', { token });
}

describe('backup codes', () => {
  test('POST /mfa/recovery/ answers 10 distinct 12-digit codes, not cached, and GET counts them', async () => {
    const { token } = await mfaUser();
    const response = await regenerate(token);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const body = await expectStatus(Promise.resolve(response), 200);
    assert.deepEqual(Object.keys(body), ['backup_codes']);
    assert.equal(body.backup_codes.length, 10);
    assert.equal(new Set(body.backup_codes).size, 10);
    for (const code of body.backup_codes) assert.match(code, /^[0-9]{12}$/);
    assert.deepEqual(await expectStatus(remaining(token), 200), { remaining: 10 });
  });

  test('no answer that names a phone number or counts backup codes may be cached', async () => {
    const { token } = await mfaUser();
    for (const response of [await remaining(token), await service.call('/mfa/', { token })]) {
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
    }
  });

  test('a backup code logs in once, with amr pwd+backup, and leaves MFA on', async () => {
    const { username, token } = await mfaUser();
    const [code] = (await expectStatus(regenerate(token), 200)).backup_codes;
    const sent = service.twilio.messages.length;
    const tokens = await expectStatus(service.login(username, PASSWORD, { backup_code: code }), 200);
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'backup']);
    assert.equal(service.twilio.messages.length, sent, 'no SMS for a backup-code login');
    assert.equal(
      (await expectStatus(service.login(username, PASSWORD, { backup_code: code }), 400)).error,
      'invalid_grant',
    );
    assert.deepEqual(await expectStatus(remaining(token), 200), { remaining: 9 });
    assert.equal((await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200)).enabled, true);
    // A backup-code login counts as a second factor.
    await expectStatus(remaining(tokens.access_token), 200);
  });

  test('a new set replaces the old one: old codes stop working', async () => {
    const { username, token } = await mfaUser();
    const old = (await expectStatus(regenerate(token), 200)).backup_codes;
    const fresh = (await expectStatus(regenerate(token), 200)).backup_codes;
    const stale = old.find((code: string) => !fresh.includes(code));
    assert.equal(
      (await expectStatus(service.login(username, PASSWORD, { backup_code: stale }), 400)).error,
      'invalid_grant',
    );
    await expectStatus(service.login(username, PASSWORD, { backup_code: fresh[0] }), 200);
  });

  test('another user’s code, or a wrong one, does not log in', async () => {
    const first = await mfaUser();
    const second = await mfaUser();
    const [code] = (await expectStatus(regenerate(first.token), 200)).backup_codes;
    await expectStatus(regenerate(second.token), 200);
    assert.equal(
      (await expectStatus(service.login(second.username, PASSWORD, { backup_code: code }), 400)).error,
      'invalid_grant',
    );
    await expectStatus(service.login(first.username, PASSWORD, { backup_code: code }), 200);
  });

  test('of 20 simultaneous logins with one backup code, exactly one succeeds (the rest are refused or throttled)', async () => {
    const { username, token } = await mfaUser();
    const [code] = (await expectStatus(regenerate(token), 200)).backup_codes;
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => service.login(username, PASSWORD, { backup_code: code })),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses}`);
    assert.ok(
      statuses.every((status) => status === 200 || status === 400 || status === 429),
      `statuses: ${statuses}`,
    );
  });

  test('both endpoints need a login that carried the second factor (RFC 9470 401 otherwise)', async () => {
    const { username } = await mfaUser();
    await expectStatus(service.login(username, PASSWORD), 200);
    // A password-only token cannot be had while MFA is on; one from before enrolment is weak.
    const name = `backup-weak-${++userCount}`;
    const phone = nextPhone();
    await service.createUser(name, PASSWORD);
    const weak = await service.accessToken(name, PASSWORD);
    await service.enrolSms(weak, phone);
    // The login that turned MFA on may make the first set for STEP_UP_MAX_AGE (backup-codes-offered.test.ts).
    service.clock.advance(service.config.stepUpMaxAgeSeconds + 1);
    for (const response of [await regenerate(weak), await remaining(weak)]) {
      assert.equal(response.status, 401);
      assert.equal(((await response.json()) as { error: string }).error, 'insufficient_user_authentication');
    }
  });

  test('while MFA is off: 409 mfa_not_enabled', async () => {
    const name = `backup-off-${++userCount}`;
    await service.createUser(name, PASSWORD);
    const token = await service.accessToken(name, PASSWORD);
    assert.equal((await expectStatus(regenerate(token), 409)).error, 'mfa_not_enabled');
    assert.equal((await expectStatus(remaining(token), 409)).error, 'mfa_not_enabled');
  });

  test('DELETE /mfa/ removes the backup codes', async () => {
    const { username, token } = await mfaUser();
    const [code] = (await expectStatus(regenerate(token), 200)).backup_codes;
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);
    // With MFA off a login succeeds with any code ignored; so turn MFA on again and try the old code.
    service.clock.advance(31);
    const weak = await service.accessToken(username, PASSWORD);
    const phone = nextPhone();
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token: weak, body: { phone_number: phone } }),
      200,
    );
    await expectStatus(
      service.call('/mfa/sms/verify/', {
        method: 'PUT',
        token: weak,
        body: { mfa_code: service.twilio.lastCodeFor(`+${phone}`) },
      }),
      200,
    );
    assert.equal(
      (await expectStatus(service.login(username, PASSWORD, { backup_code: code }), 400)).error,
      'invalid_grant',
    );
  });
});
