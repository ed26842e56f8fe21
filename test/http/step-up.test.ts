import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import * as OTPAuth from 'otpauth';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const PASSWORD = 'correct horse battery';
const MFA_OTP = 'http://auth0.com/oauth/grant-type/mfa-otp';
const MFA_RECOVERY = 'http://auth0.com/oauth/grant-type/mfa-recovery-code';

// As in oauth-interop.test.ts: the libraries call the URLs the metadata names, so the issuer must be
// an address the service answers on; a proxy on a port known beforehand stands in front of it.
const upstream = { host: '127.0.0.1', port: 0 };
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let service: Service;
let issuer: URL;
const insecure = { [oauth.allowInsecureRequests]: true } as const;

before(async () => {
  proxy = await startTcpProxy(upstream);
  const issuerUrl = `http://127.0.0.1:${proxy.port}`;
  service = await startService({ env: { ISSUER: issuerUrl } });
  upstream.port = Number(new URL(service.url).port);
  issuer = new URL(issuerUrl);
});
after(async () => {
  await service.close();
  await proxy.cut();
});

let userCount = 0;
async function mfaUser() {
  const phone = nextPhone();
  const user = await service.createUserWithMfa(`step-${++userCount}`, PASSWORD, phone);
  return { ...user, e164: `+${phone}` };
}

function token(body: Record<string, string>, headers: Record<string, string> = {}) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: new URLSearchParams(body).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

async function createClient(body: object) {
  return expectStatus(service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body }), 201) as Promise<{
    client_id: string;
    client_secret: string;
  }>;
}

describe('acr and auth_time (CONTRACT §14)', () => {
  test('every access token carries acr: aal1 for a password, aal2 with a second factor or a backup code; introspection too', async () => {
    const plain = `step-${++userCount}`;
    await service.createUser(plain, PASSWORD);
    const weak = await service.accessToken(plain, PASSWORD);
    assert.equal(decodeJwt(weak).acr, 'aal1');
    assert.equal(typeof decodeJwt(weak).auth_time, 'number');

    const user = await mfaUser();
    assert.equal(decodeJwt(user.token).acr, 'aal2');
    const [backup] = (await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: user.token }), 200))
      .backup_codes;
    const viaBackup = await expectStatus(service.login(user.username, PASSWORD, { backup_code: backup }), 200);
    assert.equal(decodeJwt(viaBackup.access_token).acr, 'aal2');

    const resourceServer = await createClient({ name: 'resource server' });
    const resourceServerAuth = Buffer.from(`${resourceServer.client_id}:${resourceServer.client_secret}`);
    const introspected = await expectStatus(
      service.call('/mfa/oauth2/introspect/', {
        method: 'POST',
        body: new URLSearchParams({ token: viaBackup.access_token }).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${resourceServerAuth.toString('base64')}`,
        },
      }),
      200,
    );
    assert.equal(introspected.acr, 'aal2');
    assert.equal(introspected.auth_time, decodeJwt(viaBackup.access_token).auth_time);

    // A refresh keeps the login's acr and auth_time.
    const refreshed = await expectStatus(
      token({ grant_type: 'refresh_token', refresh_token: viaBackup.refresh_token }),
      200,
    );
    assert.equal(decodeJwt(refreshed.access_token).acr, 'aal2');
    assert.equal(decodeJwt(refreshed.access_token).auth_time, decodeJwt(viaBackup.access_token).auth_time);
  });
});

describe('sensitive calls answer RFC 9470’s challenge', () => {
  test('a second-factor login older than 10 minutes gets 401 insufficient_user_authentication, acr_values="aal2", max_age=600', async () => {
    const user = await mfaUser();
    await expectStatus(service.call('/mfa/recovery/', { token: user.token }), 200);
    // To the second when the login is 600 s old: still fresh enough.
    const authTime = Number(decodeJwt(user.token).auth_time);
    service.clock.advance(authTime + 600 - service.clock.now().getTime() / 1000);
    await expectStatus(service.call('/mfa/recovery/', { token: user.token }), 200);
    service.clock.advance(2);
    for (const [method, path] of [
      ['GET', '/mfa/recovery/'],
      ['POST', '/mfa/recovery/'],
      ['DELETE', '/mfa/'],
    ] as const) {
      const response = await service.call(path, { method, token: user.token });
      assert.equal(response.status, 401, `${method} ${path}`);
      const body = (await response.json()) as Record<string, string>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
      assert.equal(body.error, 'insufficient_user_authentication');
      assert.match(body.error_description ?? '', /max_age=600/);
      assert.match(
        response.headers.get('www-authenticate') ?? '',
        /^Bearer .*error="insufficient_user_authentication".*, acr_values="aal2", max_age=600$/,
        `${method} ${path}`,
      );
    }
    // Reading the status is not sensitive: the token itself is still valid.
    await expectStatus(service.call('/mfa/', { token: user.token }), 200);
  });

  test('oauth4webapi parses the challenge, as a client library reacting to it would', async () => {
    const user = await mfaUser();
    service.clock.advance(601);
    await assert.rejects(
      oauth.protectedResourceRequest(
        user.token,
        'GET',
        new URL('/mfa/recovery/', issuer),
        undefined,
        undefined,
        insecure,
      ),
      (error: unknown) => {
        assert.ok(error instanceof oauth.WWWAuthenticateChallengeError);
        const [challenge] = error.cause;
        assert.equal(challenge?.scheme, 'bearer');
        assert.equal(challenge?.parameters.error, 'insufficient_user_authentication');
        assert.equal(challenge?.parameters.acr_values, 'aal2');
        assert.equal(challenge?.parameters.max_age, '600');
        return true;
      },
    );
    // The client logs in again with what the challenge asked for, and the call succeeds.
    await expectStatus(service.login(user.username, PASSWORD, { acr_values: 'aal2', max_age: '600' }), 200);
    const fresh = await service.accessToken(user.username, PASSWORD, {
      mfa_code: service.twilio.lastCodeFor(user.e164),
    });
    await expectStatus(service.call('/mfa/recovery/', { token: fresh }), 200);
  });
});

describe('freshness applies to every sensitive call', () => {
  test('making a factor the default with a stale login is 401; renaming, which is not sensitive, still works', async () => {
    const user = await mfaUser();
    const start = await expectStatus(
      service.call('/mfa/totp/request/', { method: 'PUT', token: user.token, body: {} }),
      200,
    );
    const app = OTPAuth.URI.parse(start.otpauth_uri);
    const code = app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(
      service.call('/mfa/totp/verify/', { method: 'PUT', token: user.token, body: { mfa_code: code } }),
      200,
    );
    service.clock.advance(601);
    const path = `/mfa/factors/${start.factor_id}/`;
    const stale = await service.call(path, { method: 'PATCH', token: user.token, body: { is_default: true } });
    assert.equal(stale.status, 401);
    assert.match(stale.headers.get('www-authenticate') ?? '', /max_age=600/);
    await expectStatus(service.call(path, { method: 'DELETE', token: user.token }), 401);
    const renamed = await expectStatus(
      service.call(path, { method: 'PATCH', token: user.token, body: { name: 'Laptop' } }),
      200,
    );
    assert.deepEqual([renamed.name, renamed.is_default], ['Laptop', false]);
  });
});

describe('turning MFA on needs a fresh login too (CONTRACT §14)', () => {
  const starts = [
    ['/mfa/totp/request/', {}],
    ['/mfa/webauthn/request/', {}],
    ['/mfa/sms/request/', { phone_number: '14155550100' }],
  ] as const;

  test('while MFA is off, a login older than STEP_UP_MAX_AGE cannot start any enrolment: 401 with max_age and no acr_values', async () => {
    const username = `stale-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const stale = await service.accessToken(username, PASSWORD);
    const sentBefore = service.twilio.messages.length;
    service.clock.advance(601);
    for (const [path, body] of starts) {
      const response = await service.call(path, { method: 'PUT', token: stale, body });
      assert.equal(response.status, 401, path);
      assert.equal(
        response.headers.get('www-authenticate'),
        `Bearer realm="mfa", error="insufficient_user_authentication", error_description="${((await response.json()) as { error_description: string }).error_description}", max_age=600`,
        path,
      );
    }
    assert.equal((await expectStatus(service.call('/mfa/', { token: stale }), 200)).enabled, false);
    assert.equal(service.twilio.messages.length, sentBefore, 'no SMS went out');
    // The password again gives a fresh login, which may.
    const fresh = await service.accessToken(username, PASSWORD);
    await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token: fresh, body: {} }), 200);
  });

  test('STEP_UP_MAX_AGE sets the freshness of enrolments and of sensitive calls alike', async () => {
    const short = await startService({ env: { STEP_UP_MAX_AGE: '120' } });
    try {
      await short.createUser('short-lived', PASSWORD);
      const token = await short.accessToken('short-lived', PASSWORD);
      short.clock.advance(121);
      const refused = await short.call('/mfa/totp/request/', { method: 'PUT', token, body: {} });
      assert.equal(refused.status, 401);
      assert.match(refused.headers.get('www-authenticate') ?? '', /, max_age=120$/);
      const user = await short.createUserWithMfa('short-mfa', PASSWORD, nextPhone());
      await expectStatus(short.call('/mfa/recovery/', { token: user.token }), 200);
      short.clock.advance(120);
      const sensitive = await short.call('/mfa/recovery/', { token: user.token });
      assert.equal(sensitive.status, 401);
      assert.match(sensitive.headers.get('www-authenticate') ?? '', /acr_values="aal2", max_age=120$/);
    } finally {
      await short.close();
    }
  });

  test('finishing is judged like starting: an enrolment begun with MFA off cannot be finished by a password-only login once MFA is on', async () => {
    const username = `finish-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    // An authenticator app is started while MFA is off …
    const totp = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(totp.otpauth_uri) as OTPAuth.TOTP;
    // … then a phone turns MFA on, in the same login.
    const phone = nextPhone();
    await service.enrolSms(token, phone);
    const late = await service.call('/mfa/totp/verify/', {
      method: 'PUT',
      token,
      body: { mfa_code: app.generate({ timestamp: service.clock.now().getTime() }) },
    });
    assert.equal(late.status, 401);
    assert.match(late.headers.get('www-authenticate') ?? '', /acr_values="aal2"/);
    const factors = await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(factors.mfa_type, 'sms', 'the app was not added');
    assert.equal(factors.mfa_types, undefined);

    // The other way round: a phone started while MFA is off, an app turning it on, then the code.
    const second = `finish-${++userCount}`;
    await service.createUser(second, PASSWORD);
    const secondToken = await service.accessToken(second, PASSWORD);
    const secondPhone = nextPhone();
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token: secondToken, body: { phone_number: secondPhone } }),
      200,
    );
    const secondApp = OTPAuth.URI.parse(
      (await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token: secondToken, body: {} }), 200))
        .otpauth_uri,
    ) as OTPAuth.TOTP;
    await expectStatus(
      service.call('/mfa/totp/verify/', {
        method: 'PUT',
        token: secondToken,
        body: { mfa_code: secondApp.generate({ timestamp: service.clock.now().getTime() }) },
      }),
      200,
    );
    const smsLate = await service.call('/mfa/sms/verify/', {
      method: 'PUT',
      token: secondToken,
      body: { mfa_code: service.twilio.lastCodeFor(`+${secondPhone}`) },
    });
    assert.equal(smsLate.status, 401);
    assert.equal((await expectStatus(service.call('/mfa/', { token: secondToken }), 200)).challenge_type, 'totp');
    // The refusal spent nothing: a login with the app (the next step) finishes with the same code.
    service.clock.advance(30);
    const stepped = await service.accessToken(second, PASSWORD, {
      mfa_code: secondApp.generate({ timestamp: service.clock.now().getTime() }),
    });
    await expectStatus(
      service.call('/mfa/sms/verify/', {
        method: 'PUT',
        token: stepped,
        body: { mfa_code: service.twilio.lastCodeFor(`+${secondPhone}`) },
      }),
      200,
    );
    assert.equal((await expectStatus(service.call('/mfa/', { token: stepped }), 200)).phone_number, secondPhone);
  });

  test('finishing is judged like starting for a passkey too: begun with MFA off, refused once a phone turned it on, finished by a second-factor login', async () => {
    const username = `finish-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const { options } = await expectStatus(
      service.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
      200,
    );
    const registration = new SoftAuthenticator().register(options, issuer.origin);
    const phone = nextPhone();
    await service.enrolSms(token, phone);
    const late = await service.call('/mfa/webauthn/verify/', {
      method: 'PUT',
      token,
      body: { credential: registration },
    });
    assert.equal(late.status, 401);
    assert.match(late.headers.get('www-authenticate') ?? '', /acr_values="aal2", max_age=600$/);
    const listed = async (bearer: string) =>
      (await expectStatus(service.call('/mfa/factors/', { token: bearer }), 200)).factors.map(
        (factor: { type: string }) => factor.type,
      );
    assert.deepEqual(await listed(token), ['sms'], 'the passkey was not added');
    // The refusal spent nothing: a login with the phone finishes the same registration.
    await expectStatus(service.login(username, PASSWORD), 200);
    const stepped = await service.accessToken(username, PASSWORD, {
      mfa_code: service.twilio.lastCodeFor(`+${phone}`),
    });
    await expectStatus(
      service.call('/mfa/webauthn/verify/', { method: 'PUT', token: stepped, body: { credential: registration } }),
      200,
    );
    assert.deepEqual((await listed(stepped)).sort(), ['sms', 'webauthn']);
  });

  test('three enrolments finished at once by a password-only login: one turns MFA on, the two others are judged by the state it leaves (401), never all added', async () => {
    for (let round = 0; round < 6; round++) {
      const username = `race-on-${++userCount}`;
      await service.createUser(username, PASSWORD);
      const token = await service.accessToken(username, PASSWORD);
      const app = OTPAuth.URI.parse(
        (await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200)).otpauth_uri,
      ) as OTPAuth.TOTP;
      const phone = nextPhone();
      await expectStatus(
        service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }),
        200,
      );
      const { options } = await expectStatus(
        service.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
        200,
      );
      const finishes = [
        ['/mfa/totp/verify/', { mfa_code: app.generate({ timestamp: service.clock.now().getTime() }) }],
        ['/mfa/sms/verify/', { mfa_code: service.twilio.lastCodeFor(`+${phone}`) }],
        ['/mfa/webauthn/verify/', { credential: new SoftAuthenticator().register(options, issuer.origin) }],
      ] as const;
      // Each round sends them in another order.
      const order = [...finishes.slice(round % 3), ...finishes.slice(0, round % 3)];
      if (round >= 3) order.reverse();
      const statuses = await Promise.all(
        order.map(async ([path, body]) => {
          const response = await service.call(path, { method: 'PUT', token, body });
          await response.body?.cancel();
          return response.status;
        }),
      );
      assert.deepEqual([...statuses].sort(), [200, 401, 401], `round ${round}: ${statuses}`);
      const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
      assert.equal(factors.length, 1, `round ${round}`);
    }
  });

  test('with MFA still off, a login that aged past STEP_UP_MAX_AGE after its request cannot finish it either; the refusal spends nothing, and a fresh login finishes', async () => {
    // Each enrolment is started 400 s into its login and finished 201 s later: still pending (an
    // app's for 10 minutes, an SMS code and a passkey challenge for 5), but the login is 601 s old.
    const kinds = {
      totp: async (token: string) => {
        const started = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
        const app = OTPAuth.URI.parse(started.otpauth_uri) as OTPAuth.TOTP;
        return () => ({ mfa_code: app.generate({ timestamp: service.clock.now().getTime() }) });
      },
      sms: async (token: string) => {
        const phone = nextPhone();
        await expectStatus(
          service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }),
          200,
        );
        const code = service.twilio.lastCodeFor(`+${phone}`);
        return () => ({ mfa_code: code });
      },
      webauthn: async (token: string) => {
        const started = await expectStatus(
          service.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
          200,
        );
        const credential = new SoftAuthenticator().register(started.options, issuer.origin);
        return () => ({ credential });
      },
    };
    for (const [type, start] of Object.entries(kinds)) {
      const username = `aged-${++userCount}`;
      await service.createUser(username, PASSWORD);
      const token = await service.accessToken(username, PASSWORD);
      service.clock.advance(400);
      const finish = await start(token);
      service.clock.advance(201);
      const path = `/mfa/${type}/verify/`;
      const refused = await service.call(path, { method: 'PUT', token, body: finish() });
      assert.equal(refused.status, 401, path);
      const { error, error_description } = (await refused.json()) as { error: string; error_description: string };
      assert.equal(error, 'insufficient_user_authentication', path);
      assert.equal(
        refused.headers.get('www-authenticate'),
        `Bearer realm="mfa", error="insufficient_user_authentication", error_description="${error_description}", max_age=600`,
        path,
      );
      assert.equal((await expectStatus(service.call('/mfa/', { token }), 200)).enabled, false, path);
      const fresh = await service.accessToken(username, PASSWORD);
      const finished = await expectStatus(service.call(path, { method: 'PUT', token: fresh, body: finish() }), 200);
      assert.equal(finished.enabled, true, path);
      assert.equal(finished.challenge_type, type, path);
    }
  });
});

describe('acr_values and max_age on the password grant (RFC 9470 §4)', () => {
  test('aal2 for a user without a second factor: 400 invalid_request that says so; "aal2 aal1" is met by the password', async () => {
    const plain = `step-${++userCount}`;
    await service.createUser(plain, PASSWORD);
    const refused = await expectStatus(service.login(plain, PASSWORD, { acr_values: 'aal2' }), 400);
    assert.equal(refused.error, 'invalid_request');
    assert.match(refused.error_description, /cannot meet acr_values "aal2"/);
    const met = await expectStatus(service.login(plain, PASSWORD, { acr_values: 'aal2 aal1' }), 200);
    assert.equal(decodeJwt(met.access_token).acr, 'aal1');
  });

  test('aal1 does not lower a user’s own policy: with MFA on, a second factor is still asked for', async () => {
    const user = await mfaUser();
    assert.deepEqual(await expectStatus(service.login(user.username, PASSWORD, { acr_values: 'aal1' }), 200), {
      mfa_required: true,
      mfa_type: 'sms',
    });
  });

  test('phr asks for a passkey: a user without one gets 400 naming what is enrolled', async () => {
    const user = await mfaUser();
    const refused = await expectStatus(service.login(user.username, PASSWORD, { acr_values: 'phr' }), 400);
    assert.equal(refused.error, 'invalid_request');
    assert.match(refused.error_description, /\(sms\)/);
  });

  test('malformed acr_values or max_age are 400 invalid_request; max_age is met by the login made now', async () => {
    const plain = `step-${++userCount}`;
    await service.createUser(plain, PASSWORD);
    const malformed: Record<string, string>[] = [
      { acr_values: '' },
      { acr_values: 'aal2  aal1' },
      { acr_values: 'urn:unknown' },
      { max_age: '-1' },
      { max_age: 'soon' },
    ];
    for (const extra of malformed) {
      assert.equal(
        (await expectStatus(service.login(plain, PASSWORD, extra), 400)).error,
        'invalid_request',
        JSON.stringify(extra),
      );
    }
    const tokens = await expectStatus(service.login(plain, PASSWORD, { max_age: '0' }), 200);
    assert.equal(decodeJwt(tokens.access_token).auth_time, Math.floor(service.clock.now().getTime() / 1000));
  });
});

describe('clients that take the 403 challenge: the mfa_token flow (CONTRACT §14)', () => {
  let client: { client_id: string; client_secret: string };
  const basic = () => ({
    authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
  });
  before(async () => {
    client = await createClient({ name: 'generic oauth client', mfa_challenge: 'error' });
  });

  test('the password alone answers 403 mfa_required with an mfa_token; mfa-otp finishes the login without the password', async () => {
    const user = await mfaUser();
    const response = await token({ grant_type: 'password', username: user.username, password: PASSWORD }, basic());
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const challenge = (await response.json()) as Record<string, string>;
    assert.deepEqual(Object.keys(challenge).sort(), ['error', 'error_description', 'mfa_token', 'mfa_type']);
    assert.equal(challenge.error, 'mfa_required');
    assert.equal(challenge.mfa_type, 'sms');
    assert.ok((challenge.mfa_token ?? '').length >= 43, 'at least 256 random bits');
    const code = service.twilio.lastCodeFor(user.e164);
    const tokens = await expectStatus(
      token({ grant_type: MFA_OTP, mfa_token: challenge.mfa_token ?? '', otp: code }, basic()),
      200,
    );
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'sms']);
    assert.equal(decodeJwt(tokens.access_token).client_id, client.client_id);
    // Spent: a second use is refused, even with another right proof.
    const again = await expectStatus(
      token({ grant_type: MFA_OTP, mfa_token: challenge.mfa_token ?? '', otp: code }, basic()),
      400,
    );
    assert.equal(again.error, 'invalid_grant');
    // Stored hashed.
    assert.ok(
      !(await service.dumpDatabase()).includes(challenge.mfa_token ?? ''),
      'the mfa_token is not stored in clear',
    );
  });

  test('a wrong otp or recovery_code is invalid_grant naming that field and leaves the mfa_token for another try; mfa-recovery-code takes a backup code', async () => {
    const user = await mfaUser();
    const [backup] = (await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: user.token }), 200))
      .backup_codes;
    const { mfa_token: mfaToken } = await expectStatus(
      token({ grant_type: 'password', username: user.username, password: PASSWORD }, basic()),
      403,
    );
    const wrong = await expectStatus(token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: '000000' }, basic()), 400);
    assert.equal(wrong.error, 'invalid_grant');
    // The grant's own field names, not the password grant's mfa_code and backup_code.
    assert.match(wrong.error_description, /^otp: /);
    assert.doesNotMatch(wrong.error_description, /mfa_code/);
    const badFormat = await expectStatus(
      token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: '12345' }, basic()),
      400,
    );
    assert.match(badFormat.error_description, /^otp: expected a string of exactly 6 digits/);
    const wrongBackup = await expectStatus(
      token({ grant_type: MFA_RECOVERY, mfa_token: mfaToken, recovery_code: '000000000000' }, basic()),
      400,
    );
    assert.equal(wrongBackup.error_description, 'recovery_code: the code is wrong or already used');
    const tokens = await expectStatus(
      token({ grant_type: MFA_RECOVERY, mfa_token: mfaToken, recovery_code: backup }, basic()),
      200,
    );
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'backup']);
  });

  test("the login is dated from the password, not from the otp: auth_time and the login's end", async () => {
    const user = await mfaUser();
    const passwordAt = Math.floor(service.clock.now().getTime() / 1000);
    const { mfa_token: mfaToken } = await expectStatus(
      token({ grant_type: 'password', username: user.username, password: PASSWORD }, basic()),
      403,
    );
    service.clock.advance(290);
    const code = service.twilio.lastCodeFor(user.e164);
    const tokens = await expectStatus(token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: code }, basic()), 200);
    assert.equal(decodeJwt(tokens.access_token).auth_time, passwordAt);
    service.clock.advance(service.config.refreshTokenTtlSeconds - 290 + 1);
    const ended = await expectStatus(
      token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, basic()),
      400,
    );
    assert.match(ended.error_description, /expired/);
  });

  test('an mfa_token is bound to its client and lives 5 minutes', async () => {
    const user = await mfaUser();
    const { mfa_token: mfaToken } = await expectStatus(
      token({ grant_type: 'password', username: user.username, password: PASSWORD }, basic()),
      403,
    );
    const code = service.twilio.lastCodeFor(user.e164);
    const other = await createClient({ name: 'another client', mfa_challenge: 'error' });
    const otherBasic = `Basic ${Buffer.from(`${other.client_id}:${other.client_secret}`).toString('base64')}`;
    await expectStatus(
      token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: code }, { authorization: otherBasic }),
      400,
    );
    await expectStatus(token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: code }), 400);
    service.clock.advance(301);
    const expired = await expectStatus(token({ grant_type: MFA_OTP, mfa_token: mfaToken, otp: code }, basic()), 400);
    assert.match(expired.error_description, /expired/);
  });

  test('missing mfa_token, otp or recovery_code is 400 invalid_request', async () => {
    const incomplete: Record<string, string>[] = [
      { grant_type: MFA_OTP, otp: '123456' },
      { grant_type: MFA_OTP, mfa_token: 'x' },
      { grant_type: MFA_RECOVERY, mfa_token: 'x' },
    ];
    for (const body of incomplete) {
      assert.equal((await expectStatus(token(body, basic()), 400)).error, 'invalid_request', JSON.stringify(body));
    }
  });

  test('oauth4webapi runs the whole flow as a generic client: ResponseBodyError mfa_required, then the mfa-otp grant', async () => {
    const user = await mfaUser();
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    assert.ok(as.grant_types_supported?.includes(MFA_OTP));
    const generic = { client_id: client.client_id };
    const auth = oauth.ClientSecretBasic(client.client_secret);
    const password = await oauth.genericTokenEndpointRequest(
      as,
      generic,
      auth,
      'password',
      { username: user.username, password: PASSWORD },
      insecure,
    );
    let mfaToken = '';
    await assert.rejects(oauth.processGenericTokenEndpointResponse(as, generic, password), (error: unknown) => {
      assert.ok(error instanceof oauth.ResponseBodyError, String(error));
      assert.equal(error.error, 'mfa_required');
      assert.equal(error.status, 403);
      mfaToken = String(error.cause.mfa_token);
      return true;
    });
    const finished = await oauth.genericTokenEndpointRequest(
      as,
      generic,
      auth,
      MFA_OTP,
      { mfa_token: mfaToken, otp: service.twilio.lastCodeFor(user.e164) },
      insecure,
    );
    const tokens = await oauth.processGenericTokenEndpointResponse(as, generic, finished);
    assert.equal(tokens.token_type, 'bearer');
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'sms']);
  });

  test('the admin API shows and changes a client’s mfa_challenge; a bad value is 400', async () => {
    const seed = await createClient({ name: 'seed client' });
    const path = `/admin/clients/${seed.client_id}`;
    const shown = await expectStatus(service.call(path, { token: ADMIN_TOKEN }), 200);
    assert.deepEqual(
      { client_id: shown.client_id, name: shown.name, mfa_challenge: shown.mfa_challenge },
      { client_id: seed.client_id, name: 'seed client', mfa_challenge: 'seed' },
    );
    const changed = await expectStatus(
      service.call(path, { method: 'PATCH', token: ADMIN_TOKEN, body: { mfa_challenge: 'error' } }),
      200,
    );
    assert.equal(changed.mfa_challenge, 'error');
    for (const body of [{}, { mfa_challenge: 'loud' }]) {
      await expectStatus(service.call(path, { method: 'PATCH', token: ADMIN_TOKEN, body }), 400);
    }
    await expectStatus(service.call('/admin/clients/no-such-client', { token: ADMIN_TOKEN }), 404);
    await expectStatus(
      service.call('/admin/clients', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { name: 'x', mfa_challenge: 'loud' },
      }),
      400,
    );
  });
});
