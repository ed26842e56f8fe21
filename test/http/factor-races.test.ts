import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt } from 'jose';
import * as OTPAuth from 'otpauth';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { messagesTo } from '../support/sms-calls.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  // A one-second Twilio deadline instead of ten, so that "Twilio hangs" costs a second of real time.
  service = await startService({
    adjust: (config) =>
      config.sms.kind === 'twilio' ? { ...config, sms: { ...config.sms, timeoutMs: 1000 } } : config,
  });
});
after(() => service.close());

let userCount = 0;

function codeOf(app: OTPAuth.TOTP) {
  return app.generate({ timestamp: service.clock.now().getTime() });
}

/** A user with an SMS factor (the default) and an authenticator app, and a fresh token from an app login. */
async function smsAndTotpUser() {
  const phone = nextPhone();
  const { userId, username, token: smsToken } = await service.createUserWithMfa(`race-${++userCount}`, PASSWORD, phone);
  const start = await expectStatus(
    service.call('/mfa/totp/request/', { method: 'PUT', token: smsToken, body: {} }),
    200,
  );
  const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
  await expectStatus(
    service.call('/mfa/totp/verify/', { method: 'PUT', token: smsToken, body: { mfa_code: codeOf(app) } }),
    200,
  );
  service.clock.advance(30);
  const { access_token: token } = await expectStatus(service.login(username, PASSWORD, { mfa_code: codeOf(app) }), 200);
  const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
  const idOf = (type: string) => factors.find((factor: { type: string }) => factor.type === type).id as string;
  return { userId, username, phone, token: token as string, smsId: idOf('sms'), totpId: idOf('totp') };
}

/** `count` users, made one after the other: racing for several users at once meets the race on every run. */
async function several<T>(count: number, make: () => Promise<T>): Promise<T[]> {
  const made: T[] = [];
  for (let i = 0; i < count; i++) made.push(await make());
  return made;
}

function removeFactor(token: string, factorId: string) {
  return service.call(`/mfa/factors/${factorId}/`, { method: 'DELETE', token });
}

function regenerateBackupCodes(token: string) {
  return service.call('/mfa/recovery/', { method: 'POST', token });
}

/** The user's rows in `table`, read from the database itself. */
async function rowsOf(table: string, userId: string): Promise<Record<string, unknown>[]> {
  const line = (await service.dumpDatabase()).split('\n').find((dump) => dump.startsWith(`${table}: `));
  const rows = JSON.parse(line?.slice(table.length + 2) ?? '[]') as { user_id: string }[];
  return rows.filter((row) => row.user_id === userId);
}

async function eventTypes(userId: string): Promise<string[]> {
  const { events } = await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
  return events.map((event: { type: string }) => event.type);
}

/** Resolves once the fake Twilio has taken `count` messages to `phone` (digits); throws after 5 s. */
async function messagesReached(phone: string, count: number): Promise<void> {
  for (const started = Date.now(); messagesTo(service, phone).length < count; await sleep(5)) {
    if (Date.now() - started > 5000) throw new Error(`no message ${count} to +${phone}`);
  }
}

describe('removing factors while other changes run (CONTRACT §10)', () => {
  test('of two simultaneous removals of a user’s only two factors, the later turns MFA off exactly like DELETE /mfa/', async () => {
    const users = await several(3, smsAndTotpUser);
    for (const user of users) await expectStatus(regenerateBackupCodes(user.token), 200);

    const removals = users.flatMap((user) => [user.smsId, user.totpId].map((id) => removeFactor(user.token, id)));
    assert.deepEqual(
      (await Promise.all(removals)).map((answer) => answer.status),
      removals.map(() => 204),
    );

    for (const user of users) {
      assert.deepEqual(await expectStatus(service.call('/mfa/', { token: user.token }), 200), {
        enabled: false,
        challenge_type: '',
        phone_number: '',
      });
      assert.equal((await rowsOf('mfa_factor', user.userId)).length, 0);
      assert.equal((await rowsOf('backup_code', user.userId)).length, 0, 'backup codes go with MFA');
      assert.equal((await rowsOf('one_time_code', user.userId)).length, 0);
      assert.ok((await eventTypes(user.userId)).includes('mfa_disabled'));
      // MFA is off, as after DELETE /mfa/: a regeneration is refused.
      assert.equal((await expectStatus(regenerateBackupCodes(user.token), 409)).error, 'mfa_not_enabled');
    }
  });

  test('a factor made the default while it is removed: the factor left is the default', async () => {
    const users = await several(5, smsAndTotpUser);
    const answers = await Promise.all(
      users.map((user) =>
        Promise.all([
          service.call(`/mfa/factors/${user.totpId}/`, {
            method: 'PATCH',
            token: user.token,
            body: { is_default: true },
          }),
          removeFactor(user.token, user.totpId),
        ]),
      ),
    );
    for (const [, removed] of answers) assert.equal(removed?.status, 204);
    for (const user of users) {
      const { factors } = await expectStatus(service.call('/mfa/factors/', { token: user.token }), 200);
      assert.deepEqual(
        factors.map((factor: { type: string; is_default: boolean }) => [factor.type, factor.is_default]),
        [['sms', true]],
      );
    }
  });

  test('removing the SMS factor beside another deletes its codes: a code sent to the old number never logs in, and the next login SMS goes out at once', async () => {
    const user = await smsAndTotpUser();
    // Someone holding the password and the old phone asks for a login code.
    await expectStatus(service.login(user.username, PASSWORD, { mfa_type: 'sms' }), 200);
    const codeOnOldPhone = service.twilio.lastCodeFor(`+${user.phone}`);

    await expectStatus(removeFactor(user.token, user.smsId), 204);
    assert.equal((await rowsOf('one_time_code', user.userId)).length, 0);
    assert.ok(!(await service.dumpDatabase()).includes(user.phone), 'the removed number is nowhere in the database');

    // The owner enrols a new number inside the old code's 5 minutes and its resend cooldown.
    const newPhone = nextPhone();
    await service.enrolSms(user.token, newPhone);
    const refused = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOnOldPhone }), 400);
    assert.equal(refused.error, 'invalid_grant');
    await expectStatus(service.login(user.username, PASSWORD, { mfa_type: 'sms' }), 200);
    assert.equal(messagesTo(service, newPhone).length, 2, 'the enrolment’s code, then the login’s');
    const tokens = await expectStatus(
      service.login(user.username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${newPhone}`) }),
      200,
    );
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'sms']);
  });

  test('a login SMS still at the provider when its number is removed never logs in once a new number is enrolled', async () => {
    const user = await smsAndTotpUser();
    const sent = messagesTo(service, user.phone).length;
    service.twilio.behave('hang');
    try {
      const [login] = await Promise.all([
        service.login(user.username, PASSWORD, { mfa_type: 'sms' }),
        messagesReached(user.phone, sent + 1).then(() => expectStatus(removeFactor(user.token, user.smsId), 204)),
      ]);
      assert.equal(login.status, 504); // CONTRACT §15: the code is kept, for the message may arrive
    } finally {
      service.twilio.behave('deliver');
    }
    const codeOnOldPhone = service.twilio.lastCodeFor(`+${user.phone}`);
    await service.enrolSms(user.token, nextPhone());
    const refused = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOnOldPhone }), 400);
    assert.equal(refused.error, 'invalid_grant');
  });
});

describe('factor limits hold when enrolments overlap (CONTRACT §10)', () => {
  test('an SMS enrolment that timed out while an earlier one was verified cannot verify a second SMS factor', async () => {
    const username = `race-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const [firstPhone, secondPhone] = [nextPhone(), nextPhone()];
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: firstPhone } }),
      200,
    );
    service.clock.advance(31); // past the resend cooldown

    service.twilio.behave('hang');
    try {
      const [second, first] = await Promise.all([
        service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: secondPhone } }),
        // Verified once the second request has passed its checks and is waiting on the provider.
        messagesReached(secondPhone, 1).then(() =>
          service.call('/mfa/sms/verify/', {
            method: 'PUT',
            token,
            body: { mfa_code: service.twilio.lastCodeFor(`+${firstPhone}`) },
          }),
        ),
      ]);
      assert.equal(first.status, 200);
      assert.equal(second.status, 504); // its code is kept: the message may arrive (CONTRACT §15)
    } finally {
      service.twilio.behave('deliver');
    }

    const late = await expectStatus(
      service.call('/mfa/sms/verify/', {
        method: 'PUT',
        token,
        body: { mfa_code: service.twilio.lastCodeFor(`+${secondPhone}`) },
      }),
      409,
    );
    assert.equal(late.error, 'mfa_already_enabled');
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    assert.deepEqual(
      factors.map((factor: { type: string; phone_number?: string }) => [factor.type, factor.phone_number]),
      [['sms', firstPhone]],
    );
  });
});

describe('backup codes while other changes run', () => {
  test('two simultaneous regenerations leave one set of 10', async () => {
    const { userId, token } = await service.createUserWithMfa(`race-${++userCount}`, PASSWORD, nextPhone());
    const sets = await Promise.all([regenerateBackupCodes(token), regenerateBackupCodes(token)]);
    for (const answer of sets) assert.equal(answer.status, 200);
    assert.deepEqual(await expectStatus(service.call('/mfa/recovery/', { token }), 200), { remaining: 10 });
    assert.equal((await rowsOf('backup_code', userId)).length, 10);
  });

  test('a regeneration racing DELETE /mfa/ leaves no backup code behind', async () => {
    const users = await several(3, () => service.createUserWithMfa(`race-${++userCount}`, PASSWORD, nextPhone()));
    const answers = await Promise.all(
      users.map(({ token }) =>
        Promise.all([service.call('/mfa/', { method: 'DELETE', token }), regenerateBackupCodes(token)]),
      ),
    );
    for (const [disabled, regenerated] of answers) {
      assert.equal(disabled?.status, 204);
      assert.ok([200, 409].includes(regenerated?.status ?? 0), `regeneration answered ${regenerated?.status}`);
    }
    for (const { userId } of users) assert.equal((await rowsOf('backup_code', userId)).length, 0);
  });
});

describe('factor names', () => {
  test('a name holding a lone surrogate is 400 invalid_request, like other unprintable names', async () => {
    const user = await smsAndTotpUser();
    const path = `/mfa/factors/${user.totpId}/`;
    const refused = await expectStatus(
      service.call(path, { method: 'PATCH', token: user.token, body: { name: 'Phone \ud800' } }),
      400,
    );
    assert.equal(refused.error, 'invalid_request');
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: user.token }), 200);
    assert.equal(factors.find((factor: { id: string }) => factor.id === user.totpId).name, 'Authenticator app');
  });
});
