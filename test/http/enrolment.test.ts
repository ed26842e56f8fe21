import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';
/** A valid GB mobile number (libphonenumber's full metadata). */
const GB_PHONE = '447400123456';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

let userCount = 0;
/** A fresh user without MFA and a token for them. */
async function freshUser() {
  const username = `enrol-${++userCount}`;
  const userId = await service.createUser(username, PASSWORD);
  return { username, userId, token: await service.accessToken(username, PASSWORD) };
}

function status(token: string) {
  return expectStatus(service.call('/mfa/', { token }), 200);
}

function requestCode(token: string, phone: unknown) {
  return service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } });
}

function verify(token: string, code: unknown) {
  return service.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

/** A six-digit code that is not `code`. */
function otherCode(code: string) {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

describe('the seed flow', () => {
  test('status, request, verify, login asks for the code, login with it, DELETE turns MFA off', async () => {
    const PHONE = nextPhone();
    const { username, token } = await freshUser();
    assert.deepEqual(await status(token), { enabled: false, challenge_type: '', phone_number: '' });

    assert.deepEqual(await expectStatus(requestCode(token, PHONE), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: PHONE,
    });
    assert.deepEqual(await status(token), { enabled: false, challenge_type: '', phone_number: PHONE });
    const enrolMessage = service.twilio.messages.at(-1);
    assert.equal(enrolMessage?.to, `+${PHONE}`);
    assert.match(enrolMessage?.body ?? '', /^Your MFA verification code is \d{6}\b/);

    const enabled = await expectStatus(verify(token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    assert.deepEqual(enabled, { enabled: true, challenge_type: 'sms', phone_number: PHONE });
    assert.deepEqual(await status(token), enabled);

    const sentBefore = service.twilio.messages.length;
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'sms',
    });
    assert.equal(service.twilio.messages.length, sentBefore + 1, 'the login sent an SMS');
    const tokens = await expectStatus(
      service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${PHONE}`) }),
      200,
    );
    assert.equal(tokens.token_type, 'Bearer');

    const deleted = await service.call('/mfa/', { method: 'DELETE', token: tokens.access_token });
    assert.equal(deleted.status, 204);
    assert.equal(await deleted.text(), '');
    assert.deepEqual(await status(tokens.access_token), { enabled: false, challenge_type: '', phone_number: '' });
    const afterDelete = await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(typeof afterDelete.access_token, 'string', 'with MFA off a password alone gets tokens');
  });
});

describe('PUT /mfa/sms/request/', () => {
  test('refuses numbers that are not digits-only, 7 to 15 long and possible for their country, changing nothing', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    const bad = [
      4155552671,
      '+14155552671',
      '1 415 555 2671',
      '1-415-555-2671',
      '123456',
      '1234567890123456',
      '',
      null,
      { number: PHONE },
      [PHONE],
      true,
    ];
    for (const phone of bad) {
      const body = await expectStatus(requestCode(token, phone), 400);
      assert.equal(body.error, 'invalid_request', `for ${JSON.stringify(phone)}`);
      assert.equal(typeof body.error_description, 'string');
    }
    // Well-formed digits that are no number at all (no country has the calling code 999).
    assert.equal((await expectStatus(requestCode(token, '999123456789'), 400)).error, 'invalid_phone_number');
    // Advice, not a regular expression: what to send instead.
    for (const phone of ['+14155552671', '1 415 555 2671', 4155552671]) {
      const body = await expectStatus(requestCode(token, phone), 400);
      assert.equal(
        body.error_description,
        'phone_number: expected a string of 7 to 15 digits, country code first, without + or spaces, e.g. "14155552671" for a US number or "447400123456" for a UK one',
      );
      assert.doesNotMatch(body.error_description, /pattern|\^/);
    }
    // A US number without its 1: the answer says how the digits were read, and what to send.
    const national = await expectStatus(requestCode(token, '4155552671'), 400);
    assert.equal(national.error, 'invalid_phone_number');
    assert.equal(
      national.error_description,
      'phone_number reads as a number of Switzerland (+41), where it is not a possible number; if the country code 1 was left out, send "14155552671" (+1 415 555 2671, United States)',
    );
    assert.equal(
      (await expectStatus(service.call('/mfa/sms/request/', { method: 'PUT', token, body: {} }), 400)).error,
      'invalid_request',
    );
    assert.deepEqual(await status(token), { enabled: false, challenge_type: '', phone_number: '' });
  });

  test('accepts numbers of other countries', async () => {
    for (const phone of [GB_PHONE, '33612345678', '4915123456789']) {
      const { token } = await freshUser();
      const body = await expectStatus(requestCode(token, phone), 200);
      assert.equal(body.phone_number, phone);
      assert.equal(service.twilio.messages.at(-1)?.to, `+${phone}`);
    }
  });

  test('answers 409 while MFA is on, and sends nothing', async () => {
    const PHONE = nextPhone();
    const { token } = await service.createUserWithMfa('enrol-on', PASSWORD, PHONE);
    const sent = service.twilio.messages.length;
    const body = await expectStatus(requestCode(token, GB_PHONE), 409);
    assert.equal(body.error, 'mfa_already_enabled');
    assert.equal(service.twilio.messages.length, sent);
    assert.deepEqual(await status(token), { enabled: true, challenge_type: 'sms', phone_number: PHONE });
  });

  test('a new request replaces the earlier code, which then fails', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const first = service.twilio.lastCodeFor(`+${PHONE}`);
    service.clock.advance(31);
    await expectStatus(requestCode(token, GB_PHONE), 200);
    const second = service.twilio.lastCodeFor(`+${GB_PHONE}`);
    if (first !== second) assert.equal((await expectStatus(verify(token, first), 400)).error, 'invalid_mfa_code');
    const enabled = await expectStatus(verify(token, second), 200);
    assert.equal(enabled.phone_number, GB_PHONE, 'the number the code went to is the one enrolled');
  });
});

describe('PUT /mfa/sms/verify/', () => {
  test('refuses codes that are not a string of exactly six digits', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    for (const code of [123456, '12345', '1234567', '12345a', ' 123456', '', null, ['123456'], { code: '123456' }]) {
      assert.equal(
        (await expectStatus(verify(token, code), 400)).error,
        'invalid_request',
        `for ${JSON.stringify(code)}`,
      );
    }
    assert.equal((await status(token)).enabled, false);
  });

  test('with no pending code: 400 and MFA stays off', async () => {
    const { token } = await freshUser();
    const body = await expectStatus(verify(token, '123456'), 400);
    assert.equal(body.error, 'invalid_mfa_code');
    assert.equal((await status(token)).enabled, false);
  });

  test('a wrong code: 400 and MFA stays off; the right one still works', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    assert.equal((await expectStatus(verify(token, otherCode(code)), 400)).error, 'invalid_mfa_code');
    assert.equal((await status(token)).enabled, false);
    assert.equal((await expectStatus(verify(token, code), 200)).enabled, true);
  });

  test('a code expires after 5 minutes', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    service.clock.advance(301);
    const body = await expectStatus(verify(token, code), 400);
    assert.equal(body.error, 'invalid_mfa_code');
    assert.match(body.error_description, /expired/);
    assert.equal((await status(token)).enabled, false);
  });

  test('a code still works just before 5 minutes', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    service.clock.advance(299);
    assert.equal((await expectStatus(verify(token, service.twilio.lastCodeFor(`+${PHONE}`)), 200)).enabled, true);
  });

  test('after 5 wrong attempts even the right code is refused', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    for (let attempt = 0; attempt < 5; attempt++) {
      assert.equal((await expectStatus(verify(token, otherCode(code)), 400)).error, 'invalid_mfa_code');
    }
    const body = await expectStatus(verify(token, code), 400);
    assert.match(body.error_description, /too many/);
    assert.equal((await status(token)).enabled, false);
  });

  test('4 wrong attempts leave the right code usable', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    for (let attempt = 0; attempt < 4; attempt++) await expectStatus(verify(token, otherCode(code)), 400);
    assert.equal((await expectStatus(verify(token, code), 200)).enabled, true);
  });

  test('a login code does not complete an enrolment', async () => {
    const PHONE = nextPhone();
    const { username, token: strongToken } = await service.createUserWithMfa('enrol-purpose', PASSWORD, PHONE);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token: strongToken }), 204);
    const token = await service.accessToken(username, PASSWORD);
    await expectStatus(requestCode(token, PHONE), 200);
    const enrolCode = service.twilio.lastCodeFor(`+${PHONE}`);
    // Another user's login code, and this user's own enrolment code used for login, are both refused.
    const { username: other } = await service.createUserWithMfa('enrol-purpose-other', PASSWORD, GB_PHONE);
    await expectStatus(service.login(other, PASSWORD), 200);
    const loginCode = service.twilio.lastCodeFor(`+${GB_PHONE}`);
    if (loginCode !== enrolCode)
      assert.equal((await expectStatus(verify(token, loginCode), 400)).error, 'invalid_mfa_code');
    assert.equal((await expectStatus(verify(token, enrolCode), 200)).enabled, true);
  });

  test('of 20 simultaneous verifications with the right code, exactly one succeeds', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    const responses = await Promise.all(Array.from({ length: 20 }, () => verify(token, code)));
    const statuses = responses.map((response) => response.status).sort();
    assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses: ${statuses}`);
    assert.ok(
      statuses.every((s) => s === 200 || s === 400 || s === 409),
      `statuses: ${statuses}`,
    );
  });
});

describe('DELETE /mfa/', () => {
  test('needs a login that carried the second factor: RFC 9470 401 for a password-only token', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser();
    await expectStatus(requestCode(token, PHONE), 200);
    await expectStatus(verify(token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    // `token` came from a password-only login, before MFA was on.
    const refused = await service.call('/mfa/', { method: 'DELETE', token });
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: string }).error, 'insufficient_user_authentication');
    assert.match(
      refused.headers.get('www-authenticate') ?? '',
      /^Bearer .*error="insufficient_user_authentication".*acr_values="aal2", max_age=600$/,
    );
    assert.equal((await status(token)).enabled, true, 'MFA stays on');
  });

  test('a second-factor token from before MFA was turned on again does not count', async () => {
    const PHONE = nextPhone();
    const { username, token: oldStrong } = await service.createUserWithMfa('delete-old', PASSWORD, PHONE);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token: oldStrong }), 204);
    service.clock.advance(2);
    await expectStatus(requestCode(oldStrong, PHONE), 200);
    await expectStatus(verify(oldStrong, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    const body = await expectStatus(service.call('/mfa/', { method: 'DELETE', token: oldStrong }), 401);
    assert.equal(body.error, 'insufficient_user_authentication');
    assert.ok(username);
  });

  test('while MFA is off: 409 with an error body', async () => {
    const { token } = await freshUser();
    const body = await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 409);
    assert.equal(body.error, 'mfa_not_enabled');
  });

  test('removes the pending login code: it no longer logs in once MFA is back on', async () => {
    const PHONE = nextPhone();
    const { username, token } = await service.createUserWithMfa('delete-codes', PASSWORD, PHONE);
    await expectStatus(service.login(username, PASSWORD), 200);
    const loginCode = service.twilio.lastCodeFor(`+${PHONE}`);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);
    service.clock.advance(31);
    const weak = await service.accessToken(username, PASSWORD);
    await expectStatus(requestCode(weak, PHONE), 200);
    await expectStatus(verify(weak, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    const body = await expectStatus(service.login(username, PASSWORD, { mfa_code: loginCode }), 400);
    assert.equal(body.error, 'invalid_grant');
  });
});
