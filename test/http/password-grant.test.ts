import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

let userCount = 0;
function username() {
  return `login-${++userCount}`;
}

/** A user with SMS MFA on, their phone (with +), and the clock past every cooldown. */
async function mfaUser() {
  const phone = nextPhone();
  const user = await service.createUserWithMfa(username(), PASSWORD, phone);
  return { ...user, e164: `+${phone}` };
}

function otherCode(code: string) {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

function formLogin(fields: Record<string, string>) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

describe('password grant, MFA off', () => {
  test('answers tokens to a JSON body and to a form body', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    for (const response of [
      await service.login(name, PASSWORD),
      await formLogin({ grant_type: 'password', username: name, password: PASSWORD }),
    ]) {
      const body = await expectStatus(Promise.resolve(response), 200);
      assert.deepEqual(Object.keys(body).sort(), [
        'access_token',
        'expires_in',
        'refresh_token',
        'scope',
        'token_type',
      ]);
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.expires_in, 900);
      assert.deepEqual(decodeJwt(body.access_token).amr, ['pwd']);
    }
  });

  test('ignores mfa_code and backup_code, and sends no SMS', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    const sent = service.twilio.messages.length;
    await expectStatus(service.login(name, PASSWORD, { mfa_code: '123456' }), 200);
    await expectStatus(service.login(name, PASSWORD, { backup_code: '123456789012' }), 200);
    assert.equal(service.twilio.messages.length, sent);
  });

  test('grants a scope the client may be granted, and refuses a scope that breaks RFC 6749 syntax', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    const client = await expectStatus(
      service.call('/admin/clients', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { name: 'scoped', allowed_scopes: 'read write:all' },
      }),
      201,
    );
    const credentials = { client_id: client.client_id, client_secret: client.client_secret };
    const body = await expectStatus(service.login(name, PASSWORD, { scope: 'read write:all', ...credentials }), 200);
    assert.equal(body.scope, 'read write:all');
    assert.equal(decodeJwt(body.access_token).scope, 'read write:all');
    for (const scope of ['read  write', ' read', 'read\\write', 'caf\u00e9']) {
      assert.equal((await expectStatus(service.login(name, PASSWORD, { scope }), 400)).error, 'invalid_request');
    }
  });

  test('a scope the client may not be granted is 400 invalid_scope, for the public client too (CONTRACT §18)', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    const refused = await expectStatus(service.login(name, PASSWORD, { scope: 'admin payments:write' }), 400);
    assert.equal(refused.error, 'invalid_scope');
    assert.match(
      refused.error_description,
      /may not be granted admin payments:write; it may ask for: openid profile offline_access/,
    );
    assert.equal(
      (await expectStatus(service.login(name, PASSWORD, { scope: 'openid profile' }), 200)).scope,
      'openid profile',
    );
  });
});

describe('password grant, MFA on', () => {
  test('without a code: mfa_required, no tokens, and an SMS to the enrolled number', async () => {
    const { username: name, e164 } = await mfaUser();
    const sent = service.twilio.messages.length;
    const body = await expectStatus(service.login(name, PASSWORD), 200);
    assert.deepEqual(body, { mfa_required: true, mfa_type: 'sms' });
    assert.equal(service.twilio.messages.length, sent + 1);
    assert.equal(service.twilio.messages.at(-1)?.to, e164);
  });

  test('with the right code: tokens whose amr is pwd+sms; the code is then spent', async () => {
    const { username: name, e164 } = await mfaUser();
    await expectStatus(service.login(name, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(e164);
    const body = await expectStatus(service.login(name, PASSWORD, { mfa_code: code }), 200);
    const claims = decodeJwt(body.access_token);
    assert.deepEqual(claims.amr, ['pwd', 'sms']);
    assert.equal(typeof claims.auth_time, 'number');
    const again = await expectStatus(service.login(name, PASSWORD, { mfa_code: code }), 400);
    assert.equal(again.error, 'invalid_grant');
  });

  test('a wrong code is invalid_grant and counts: after 5 wrong codes the right one is refused', async () => {
    const { username: name, e164 } = await mfaUser();
    await expectStatus(service.login(name, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(e164);
    for (let attempt = 0; attempt < 5; attempt++) {
      assert.equal(
        (await expectStatus(service.login(name, PASSWORD, { mfa_code: otherCode(code) }), 400)).error,
        'invalid_grant',
      );
    }
    // Past the user's guess budget's first wait, the code itself is found dead.
    service.clock.advance(60);
    const body = await expectStatus(service.login(name, PASSWORD, { mfa_code: code }), 400);
    assert.equal(body.error, 'invalid_grant');
    assert.match(body.error_description, /too many/);
  });

  test('a code expires after 5 minutes', async () => {
    const { username: name, e164 } = await mfaUser();
    await expectStatus(service.login(name, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(e164);
    service.clock.advance(301);
    const body = await expectStatus(service.login(name, PASSWORD, { mfa_code: code }), 400);
    assert.equal(body.error, 'invalid_grant');
    assert.match(body.error_description, /expired/);
  });

  test('an enrolment code does not log in', async () => {
    const name = username();
    const phone = nextPhone();
    await service.createUser(name, PASSWORD);
    const token = await service.accessToken(name, PASSWORD);
    await expectStatus(service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }), 200);
    const enrolCode = service.twilio.lastCodeFor(`+${phone}`);
    await expectStatus(service.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: enrolCode } }), 200);
    assert.equal(
      (await expectStatus(service.login(name, PASSWORD, { mfa_code: enrolCode }), 400)).error,
      'invalid_grant',
    );
  });

  test('a backup_code that was never issued is invalid_grant', async () => {
    const { username: name } = await mfaUser();
    const body = await expectStatus(service.login(name, PASSWORD, { backup_code: '123456789012' }), 400);
    assert.equal(body.error, 'invalid_grant');
  });

  test('of 20 simultaneous logins with one code, exactly one gets tokens, the others are refused or throttled, none gets a 5xx', async () => {
    const { username: name, e164 } = await mfaUser();
    await expectStatus(service.login(name, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(e164);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => service.login(name, PASSWORD, { mfa_code: code })),
    );
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<Record<string, unknown>>));
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses}`);
    assert.equal(bodies.filter((body) => typeof body.access_token === 'string').length, 1);
    // Attempts are counted before they are judged: past the throttles' allowance, 429 without judging.
    assert.ok(
      statuses.every((status) => status === 200 || status === 400 || status === 429),
      `statuses: ${statuses}`,
    );
    assert.ok(
      bodies.every(
        (body) =>
          body.access_token !== undefined ||
          ['invalid_grant', 'login_throttled', 'mfa_throttled'].includes(body.error as string),
      ),
    );
  });
});

describe('a wrong password reveals nothing', () => {
  test('wrong password and unknown user get the same status, body and headers', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    const wrongPassword = await service.login(name, 'not the password');
    const unknownUser = await service.login('nobody-by-this-name', 'not the password');
    assert.equal(wrongPassword.status, 400);
    assert.equal(unknownUser.status, 400);
    const first = await wrongPassword.json();
    assert.deepEqual(first, await unknownUser.json());
    assert.equal((first as { error: string }).error, 'invalid_grant');
    for (const header of ['content-type', 'cache-control', 'pragma', 'www-authenticate']) {
      assert.equal(wrongPassword.headers.get(header), unknownUser.headers.get(header), header);
    }
  });

  test('with MFA on, a wrong password answers as with MFA off, sends no SMS, and spends no code attempt', async () => {
    const { username: name, e164 } = await mfaUser();
    const plain = username();
    await service.createUser(plain, PASSWORD);
    await expectStatus(service.login(name, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(e164);
    const sent = service.twilio.messages.length;

    const withoutMfa = await expectStatus(service.login(plain, 'wrong password'), 400);
    // The n-th failure from the fifth on earns a wait of 2^(n-4) s from the login throttle: wait it out.
    let failures = 0;
    const wrongLogin = async (extra: Record<string, string> = {}) => {
      const body = await expectStatus(service.login(name, 'wrong password', extra), 400);
      failures += 1;
      service.clock.advance(failures >= 5 ? 2 ** (failures - 4) : 0);
      return body;
    };
    assert.deepEqual(await wrongLogin(), withoutMfa);
    // Neither a right nor a wrong code changes the answer, and none of them counts as an attempt.
    for (let attempt = 0; attempt < 6; attempt++) {
      assert.deepEqual(await wrongLogin({ mfa_code: otherCode(code) }), withoutMfa);
    }
    assert.deepEqual(await wrongLogin({ mfa_code: code }), withoutMfa);
    assert.equal(service.twilio.messages.length, sent);
    await expectStatus(service.login(name, PASSWORD, { mfa_code: code }), 200);
  });
});

describe('passwords that are not well-formed Unicode (CONTRACT §14)', () => {
  test('a password with a lone surrogate is refused when set, saying why, and creates nothing', async () => {
    const name = username();
    const refused = await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: name, password: 'correct horse \ud800battery' },
      }),
      400,
    );
    assert.equal(refused.error, 'invalid_request');
    assert.match(refused.error_description, /lone surrogate/);
    await expectStatus(service.call(`/admin/users?username=${name}`, { token: ADMIN_TOKEN }), 404);
  });

  test('at login a lone surrogate is never folded into U+FFFD: invalid_grant, as any wrong password', async () => {
    const name = username();
    // What a lone surrogate becomes in UTF-8, set as a real character.
    await service.createUser(name, 'correct horse \ufffdbattery');
    for (const surrogate of ['\ud800', '\udfff']) {
      const answer = await expectStatus(service.login(name, `correct horse ${surrogate}battery`), 400);
      assert.equal(answer.error, 'invalid_grant');
    }
    await expectStatus(service.login(name, 'correct horse \ufffdbattery'), 200);
  });

  test('every other place a password is set refuses one too: the person’s change and the operator’s; a current password holding one is wrong', async () => {
    const name = username();
    const userId = await service.createUser(name, 'correct horse \ufffdbattery');
    const token = await service.accessToken(name, 'correct horse \ufffdbattery');
    const change = (current: string, next: string) =>
      service.call('/mfa/password/', { method: 'PUT', token, body: { current_password: current, new_password: next } });
    const own = await expectStatus(change('correct horse \ufffdbattery', 'a new \udfffpassphrase'), 400);
    assert.equal(own.error, 'invalid_request');
    assert.match(own.error_description, /lone surrogate/);
    const folded = await expectStatus(change('correct horse \ud800battery', 'a new passphrase of words'), 400);
    assert.equal(folded.error, 'invalid_grant');
    const operator = await expectStatus(
      service.call(`/admin/users/${userId}/password`, {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { password: 'an operator’s \ud800passphrase' },
      }),
      400,
    );
    assert.equal(operator.error, 'invalid_request');
    assert.match(operator.error_description, /lone surrogate/);
    // Nothing changed: the password is still the one set first, and the login that asked still works.
    await expectStatus(service.login(name, 'a new \ufffdpassphrase'), 400);
    await expectStatus(service.login(name, 'correct horse \ufffdbattery'), 200);
    await expectStatus(service.call('/mfa/', { token }), 200);
  });

  test('a username holding a lone surrogate is 400 when created and invalid_grant at login', async () => {
    const refused = await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: 'surrogate\ud800', password: PASSWORD },
      }),
      400,
    );
    assert.equal(refused.error, 'invalid_request');
    const answer = await expectStatus(service.login('surrogate\ud800', PASSWORD), 400);
    assert.equal(answer.error, 'invalid_grant');
  });
});

describe('malformed token requests', () => {
  test('missing grant_type, username or password is invalid_request', async () => {
    const name = username();
    await service.createUser(name, PASSWORD);
    for (const body of [
      { username: name, password: PASSWORD },
      { grant_type: 'password', password: PASSWORD },
      { grant_type: 'password', username: name },
      { grant_type: 'password', username: name, password: '' },
    ]) {
      const answer = await expectStatus(service.call('/mfa/oauth2/token/', { method: 'POST', body }), 400);
      assert.equal(answer.error, 'invalid_request', JSON.stringify(body));
    }
  });

  test('both mfa_code and backup_code is invalid_request', async () => {
    const { username: name } = await mfaUser();
    const body = await expectStatus(
      service.login(name, PASSWORD, { mfa_code: '123456', backup_code: '123456789012' }),
      400,
    );
    assert.equal(body.error, 'invalid_request');
  });

  test('malformed codes are invalid_request', async () => {
    const { username: name } = await mfaUser();
    const malformed: Record<string, string>[] = [
      { mfa_code: '12345' },
      { mfa_code: 'abcdef' },
      { backup_code: '12345678901' },
    ];
    for (const extra of malformed) {
      assert.equal((await expectStatus(service.login(name, PASSWORD, extra), 400)).error, 'invalid_request');
    }
  });

  test('another grant_type is unsupported_grant_type', async () => {
    for (const grantType of ['client_credentials', 'implicit', 'PASSWORD', '']) {
      const body = await expectStatus(
        service.call('/mfa/oauth2/token/', { method: 'POST', body: { grant_type: grantType } }),
        400,
      );
      assert.equal(body.error, 'unsupported_grant_type', grantType);
    }
  });

  test('every answer carries Cache-Control: no-store and Pragma: no-cache', async () => {
    const { username: name } = await mfaUser();
    const plain = username();
    await service.createUser(plain, PASSWORD);
    const answers = [
      await service.login(plain, PASSWORD),
      await service.login(name, PASSWORD),
      await service.login(name, 'wrong'),
      await service.call('/mfa/oauth2/token/', { method: 'POST', body: '{not json' }),
      await service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: 'x',
        headers: { 'content-type': 'text/plain' },
      }),
      await service.call('/mfa/oauth2/token/', { method: 'POST', body: { grant_type: 'implicit' } }),
    ];
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 400, 400, 415, 400],
    );
    for (const answer of answers) {
      assert.equal(answer.headers.get('cache-control'), 'no-store');
      assert.equal(answer.headers.get('pragma'), 'no-cache');
    }
  });
});
