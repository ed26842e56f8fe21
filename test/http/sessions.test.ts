import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

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
