import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { onPostgres } from '../support/postgres.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { eventually } from '../support/webhook-receiver.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  // A short refresh lifetime, to see that rotation does not stretch a login.
  service = await startService({ env: { REFRESH_TOKEN_TTL: '3600' } });
});
after(() => service.close());

let userCount = 0;
const freshName = () => `session-${++userCount}`;

interface Login {
  access: string;
  refresh: string;
}

async function logIn(username: string, extra: Record<string, string> = {}): Promise<Login> {
  const body = await expectStatus(service.login(username, PASSWORD, extra), 200);
  assert.ok(body.access_token, `tokens expected: ${JSON.stringify(body)}`);
  return { access: body.access_token, refresh: body.refresh_token };
}

function refresh(refreshToken: string) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: { grant_type: 'refresh_token', refresh_token: refreshToken },
  });
}

/** Whether the login still works: its access token reads /mfa/ and its refresh token refreshes. */
async function isAlive(login: Login): Promise<boolean> {
  const status = (await service.call('/mfa/', { token: login.access })).status;
  const refreshed = await refresh(login.refresh);
  const body = (await refreshed.json()) as { refresh_token: string };
  if (refreshed.status === 200) login.refresh = body.refresh_token;
  assert.equal(status === 200, refreshed.status === 200, 'access and refresh token agree');
  return status === 200;
}

/** The statement ending a user's logins, waiting for a row lock. */
const REVOCATION_WAITERS = `select pid from pg_stat_activity
  where wait_event_type = 'Lock' and query like 'update "refresh_token" set "revoked_at"%'`;
/** A refresh waiting for the user's row (the change holds it). */
const USER_ROW_WAITERS = `select pid from pg_stat_activity
  where wait_event_type = 'Lock' and query like 'insert into "refresh_token"%'`;

/** Sessions waiting for a lock on signing_key. */
const LOCK_WAITERS = `select pid from pg_locks where not granted and relation = 'signing_key'::regclass`;

/** Waits for `condition`, failing after 10 s. */
async function until(condition: () => Promise<boolean>, what = 'the awaited state'): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `${what} was not reached in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function strongLogin(username: string, phone: string): Promise<Login> {
  service.clock.advance(31);
  await expectStatus(service.login(username, PASSWORD), 200);
  return logIn(username, { mfa_code: service.twilio.lastCodeFor(`+${phone}`) });
}

describe('sessions that end (CONTRACT §14)', () => {
  test('turning MFA on ends every other login, made when a password was enough; the one that enrolled stays', async () => {
    const name = freshName();
    await service.createUser(name, PASSWORD);
    const enrolling = await logIn(name);
    const thief = await logIn(name);
    await service.enrolSms(enrolling.access, nextPhone());
    assert.equal(await isAlive(thief), false, "the other login's tokens stop working");
    assert.equal(await isAlive(enrolling), true, 'the login that turned MFA on keeps working');
  });

  test('turning MFA off ends every other login, second-factor ones included', async () => {
    const name = freshName();
    const phone = nextPhone();
    await service.createUser(name, PASSWORD);
    await service.enrolSms((await logIn(name)).access, phone);
    const other = await strongLogin(name, phone);
    const disabling = await strongLogin(name, phone);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token: disabling.access }), 204);
    assert.equal(await isAlive(other), false);
    assert.equal(await isAlive(disabling), true);
  });

  for (const [how, reset] of [
    [
      'the admin API',
      async (userId: string) =>
        expectStatus(service.call(`/admin/users/${userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204),
    ],
  ] as const) {
    test(`an operator's reset through ${how} ends every login of the user, a thief's included`, async () => {
      const name = freshName();
      const phone = nextPhone();
      const userId = await service.createUser(name, PASSWORD);
      await service.enrolSms((await logIn(name)).access, phone);
      const owner = await strongLogin(name, phone);
      const thief = await strongLogin(name, phone);
      await reset(userId);
      assert.equal(await isAlive(owner), false);
      assert.equal(await isAlive(thief), false);
      // The password alone logs in again, with MFA off.
      const fresh = await logIn(name);
      assert.deepEqual(await expectStatus(service.call('/mfa/', { token: fresh.access }), 200), {
        enabled: false,
        challenge_type: '',
        phone_number: '',
      });
    });
  }

  test('another user keeps their logins', async () => {
    const bystander = freshName();
    await service.createUser(bystander, PASSWORD);
    const theirs = await logIn(bystander);
    const name = freshName();
    await service.createUser(name, PASSWORD);
    await service.enrolSms((await logIn(name)).access, nextPhone());
    assert.equal(await isAlive(theirs), true);
  });

  test('password-only logins in flight while MFA is turned on: none of them outlives it', async () => {
    for (let round = 0; round < 4; round++) {
      const name = freshName();
      await service.createUser(name, PASSWORD);
      const owner = await logIn(name);
      const phone = nextPhone();
      await expectStatus(
        service.call('/mfa/sms/request/', { method: 'PUT', token: owner.access, body: { phone_number: phone } }),
        200,
      );
      // Five: the username's attempts counted before they are judged.
      const racing = Array.from({ length: 5 }, () => service.login(name, PASSWORD));
      await new Promise((resolve) => setTimeout(resolve, 40 + round * 40));
      const code = service.twilio.lastCodeFor(`+${phone}`);
      await expectStatus(
        service.call('/mfa/sms/verify/', { method: 'PUT', token: owner.access, body: { mfa_code: code } }),
        200,
      );
      for (const answer of await Promise.all(racing)) {
        const body = (await answer.json()) as Record<string, string | undefined>;
        if (answer.status === 400) {
          // Decided while MFA was off, finished after: refused.
          assert.equal(body.error, 'invalid_grant');
          assert.match(body.error_description ?? '', /second factors changed during this login/);
        } else if (body.access_token && body.refresh_token) {
          const login = { access: body.access_token, refresh: body.refresh_token };
          assert.equal(await isAlive(login), false, 'a password-only login ended by MFA being turned on');
        } else {
          assert.deepEqual(body, { mfa_required: true, mfa_type: 'sms' });
        }
      }
      assert.equal(await isAlive(owner), true);
    }
  });

  test('a login decided before MFA was turned on and finished after it gets no tokens', {
    skip: !onPostgres && 'PostgreSQL: a lock parks the login',
  }, async () => {
    const name = freshName();
    await service.createUser(name, PASSWORD);
    const owner = await logIn(name);
    // The owner's token verified once before the lock: verifying reads the signing key too.
    await expectStatus(service.call('/mfa/', { token: owner.access }), 200);
    // The login reads the newest signing key again after its 10 s cache; a lock on the table parks it
    // there, after its password and its factors were judged and before its refresh token is stored.
    service.clock.advance(11);
    const locker = new pg.Client({ connectionString: service.config.databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table signing_key in access exclusive mode');
      const racing = service.login(name, PASSWORD);
      await until(async () => (await locker.query(LOCK_WAITERS)).rows.length > 0);
      await service.enrolSms(owner.access, nextPhone());
      await locker.query('commit');
      const refused = await expectStatus(racing, 400);
      assert.equal(refused.error, 'invalid_grant');
      assert.match(refused.error_description, /log in again/);
    } finally {
      await locker.end();
    }
    assert.deepEqual(await expectStatus(service.login(name, PASSWORD), 200), { mfa_required: true, mfa_type: 'sms' });
  });

  test('a refresh while MFA is turned on cannot carry a login past it', {
    skip: !onPostgres && 'PostgreSQL: a lock holds the change midway',
  }, async () => {
    const name = freshName();
    await service.createUser(name, PASSWORD);
    const owner = await logIn(name);
    const held = await logIn(name); // a login whose row a lock holds, so that the change waits midway
    const other = await logIn(name); // a login made before MFA, refreshed during the change
    const phone = nextPhone();
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token: owner.access, body: { phone_number: phone } }),
      200,
    );
    const locker = new pg.Client({ connectionString: service.config.databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('select id from refresh_token where family_id = $1 for update', [decodeJwt(held.access).sid]);
      const change = service.call('/mfa/sms/verify/', {
        method: 'PUT',
        token: owner.access,
        body: { mfa_code: service.twilio.lastCodeFor(`+${phone}`) },
      });
      // The change's revoking statement has its snapshot and waits on the held row.
      // Watched from outside the locker's transaction, which sees the activity view as it first read it.
      const waiting = (query: string) => async () => {
        const watcher = new pg.Client({ connectionString: service.config.databaseUrl });
        await watcher.connect();
        try {
          return (await watcher.query(query)).rows.length > 0;
        } finally {
          await watcher.end();
        }
      };
      await until(waiting(REVOCATION_WAITERS), 'the change waiting in its revoking statement');
      const refreshing = refresh(other.refresh);
      await until(waiting(USER_ROW_WAITERS), "the refresh waiting for the user's row");
      await locker.query('commit');
      await expectStatus(change, 200);
      const refused = await expectStatus(refreshing, 400);
      assert.equal(refused.error, 'invalid_grant');
      assert.match(refused.error_description, /revoked; log in again/, 'ended by the change, not taken for a reuse');
    } finally {
      await locker.end();
    }
    assert.equal(await isAlive(other), false);
    assert.equal(await isAlive(owner), true);
  });

  test('refresh tokens past their end are deleted within the hour: a later use is refused as unknown', async () => {
    const name = freshName();
    await service.createUser(name, PASSWORD);
    const ended = await logIn(name);
    service.clock.advance(3600 + 3601); // past REFRESH_TOKEN_TTL, and an hour since the last clean-up
    // Another node starts: its first check finds the hourly clean-up due by the clock and runs it.
    const stopNode = await service.startAnotherNode();
    try {
      await eventually(async () => {
        const refused = await expectStatus(refresh(ended.refresh), 400);
        assert.equal(refused.error, 'invalid_grant');
        return refused.error_description === 'the refresh token is invalid'; // deleted, not merely expired
      });
    } finally {
      await stopNode();
    }
  });

  test('a login lasts REFRESH_TOKEN_TTL from the password, however often it is refreshed', async () => {
    const name = freshName();
    await service.createUser(name, PASSWORD);
    const login = await logIn(name);
    service.clock.advance(1800);
    const rotated = await expectStatus(refresh(login.refresh), 200);
    service.clock.advance(1799);
    const again = await expectStatus(refresh(rotated.refresh_token), 200);
    service.clock.advance(2);
    const expired = await expectStatus(refresh(again.refresh_token), 400);
    assert.equal(expired.error, 'invalid_grant');
    assert.match(expired.error_description, /expired/);
  });
});

describe('GET /mfa/ under concurrency', () => {
  test('requests that arrive together are each answered for their own token: alive, revoked, of a deleted user', async () => {
    const plain = freshName();
    await service.createUser(plain, PASSWORD);
    const plainLogin = await logIn(plain);
    const enrolled = freshName();
    await service.createUser(enrolled, PASSWORD);
    const enrolling = await logIn(enrolled);
    const ended = await logIn(enrolled);
    await service.enrolSms(enrolling.access, nextPhone());
    const deleted = freshName();
    const deletedId = await service.createUser(deleted, PASSWORD);
    const deletedLogin = await logIn(deleted);
    await expectStatus(service.call(`/admin/users/${deletedId}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);

    // Each answer alone first, then twice 15 copies of all four at once (PostgreSQL reads them in one statement).
    const cases = [plainLogin.access, enrolling.access, ended.access, deletedLogin.access];
    const answer = async (token: string): Promise<{ status: number; body: any }> => {
      const response = await service.call('/mfa/', { token });
      return { status: response.status, body: await response.json() };
    };
    const alone: { status: number; body: any }[] = [];
    for (const token of cases) alone.push(await answer(token));
    assert.deepEqual(
      alone.map(({ status }) => status),
      [200, 200, 401, 401],
    );
    assert.equal(alone[0]?.body.enabled, false);
    assert.equal(alone[1]?.body.enabled, true);
    assert.match(alone[2]?.body.error_description, /revoked/);
    assert.match(alone[3]?.body.error_description, /no longer exists/);
    // The second round reuses the first's connections, so its requests arrive in the same moment.
    for (let round = 0; round < 2; round++) {
      const together = await Promise.all(Array.from({ length: 15 }, () => cases.map(answer)).flat());
      for (const [index, result] of together.entries()) {
        assert.deepEqual(result, alone[index % cases.length], `request ${index}`);
      }
    }
  });
});

describe('deleted users', () => {
  test("a deleted user's access token is 401 invalid_token everywhere, and changes nothing", async () => {
    const name = freshName();
    const userId = await service.createUser(name, PASSWORD);
    const login = await logIn(name);
    await expectStatus(service.call(`/admin/users/${userId}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
    for (const [method, path, body] of [
      ['GET', '/mfa/', undefined],
      ['PUT', '/mfa/sms/request/', { phone_number: nextPhone() }],
      ['PUT', '/mfa/sms/verify/', { mfa_code: '123456' }],
      ['POST', '/mfa/recovery/', undefined],
    ] as const) {
      const response = await service.call(path, { method, token: login.access, body });
      assert.equal(response.status, 401, `${method} ${path}`);
      assert.match(response.headers.get('www-authenticate') ?? '', /invalid_token/);
      assert.match(((await response.json()) as { error_description: string }).error_description, /no longer exists/);
    }
    await expectStatus(refresh(login.refresh), 400);
    await expectStatus(service.call(`/admin/users/${userId}`, { method: 'DELETE', token: ADMIN_TOKEN }), 404);
    await expectStatus(service.login(name, PASSWORD), 400);
  });
});
