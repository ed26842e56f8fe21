import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import * as OTPAuth from 'otpauth';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService({ env: { SERVICE_NAME: 'Acme Auth' } });
});
after(() => service.close());

let userCount = 0;

interface Enrolled {
  username: string;
  /** The authenticator, built by the otpauth package from nothing but the otpauth_uri. */
  app: OTPAuth.TOTP;
  factorId: string;
  /** A token from the login that enrolled the app (password only). */
  token: string;
}

/** The code the app shows `stepsFromNow` steps from the service's now. */
function codeOf(app: OTPAuth.TOTP, stepsFromNow = 0) {
  return app.generate({ timestamp: service.clock.now().getTime() + stepsFromNow * 30_000 });
}

/** A 6-digit code the app shows for none of the steps accepted around now. */
function wrongCodeFor(app: OTPAuth.TOTP): string {
  const accepted = new Set([-1, 0, 1].map((steps) => codeOf(app, steps)));
  for (let candidate = 0; ; candidate++) {
    const code = String(candidate).padStart(6, '0');
    if (!accepted.has(code)) return code;
  }
}

function requestTotp(token: string, body: object = {}) {
  return service.call('/mfa/totp/request/', { method: 'PUT', token, body });
}

function verifyTotp(token: string, code: string) {
  return service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

/** A user who has just enrolled an authenticator app as their only factor; the clock one step on. */
async function enrolledUser(): Promise<Enrolled> {
  const username = `totp-${++userCount}`;
  await service.createUser(username, PASSWORD);
  const token = await service.accessToken(username, PASSWORD);
  const start = await expectStatus(requestTotp(token), 200);
  const app = OTPAuth.URI.parse(start.otpauth_uri);
  assert.ok(app instanceof OTPAuth.TOTP);
  await expectStatus(verifyTotp(token, codeOf(app)), 200);
  service.clock.advance(30);
  return { username, app, factorId: start.factor_id, token };
}

async function strongToken(user: Enrolled) {
  const tokens = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200);
  service.clock.advance(30);
  return tokens.access_token as string;
}

describe('enrolling an authenticator app (CONTRACT §11)', () => {
  test('the request answers a base32 secret and an otpauth URI that a real authenticator reads', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const response = await requestTotp(token, { name: 'Phone app' });
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const start = await expectStatus(Promise.resolve(response), 200);
    assert.deepEqual(Object.keys(start).sort(), ['factor_id', 'otpauth_uri', 'secret']);
    assert.match(start.secret, /^[A-Z2-7]{32}$/, '160 bits of base32, no padding');
    const app = OTPAuth.URI.parse(start.otpauth_uri);
    assert.ok(app instanceof OTPAuth.TOTP);
    assert.equal(app.issuer, 'Acme Auth');
    assert.equal(app.label, username);
    assert.equal(app.algorithm, 'SHA1');
    assert.equal(app.digits, 6);
    assert.equal(app.period, 30);
    assert.equal(app.secret.base32, start.secret);
    assert.match(start.otpauth_uri, /^otpauth:\/\/totp\/Acme%20Auth:totp-\d+\?secret=[A-Z2-7]+&issuer=Acme%20Auth&/);

    // Until verified, nothing is on.
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: '',
    });
    assert.deepEqual(await expectStatus(verifyTotp(token, codeOf(app)), 200), {
      enabled: true,
      challenge_type: 'totp',
      phone_number: '',
    });
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    assert.equal(factors.length, 1);
    assert.deepEqual(Object.keys(factors[0]).sort(), [
      'created_at',
      'id',
      'is_default',
      'last_used_at',
      'name',
      'type',
    ]);
    assert.equal(factors[0].id, start.factor_id);
    assert.equal(factors[0].type, 'totp');
    assert.equal(factors[0].name, 'Phone app');
    assert.equal(factors[0].is_default, true);
    assert.equal(factors[0].last_used_at, null);
    assert.ok(!Number.isNaN(Date.parse(factors[0].created_at)));
  });

  test('a wrong code, no pending enrolment, or one older than 10 minutes: 400 invalid_mfa_code, MFA stays off', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    assert.equal((await expectStatus(verifyTotp(token, '123456'), 400)).error, 'invalid_mfa_code');
    const app = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    const wrong = String((Number(codeOf(app)) + 1) % 1_000_000).padStart(6, '0');
    assert.equal((await expectStatus(verifyTotp(token, wrong), 400)).error, 'invalid_mfa_code');
    service.clock.advance(601);
    const late = await expectStatus(verifyTotp(token, codeOf(app)), 400);
    assert.match(late.error_description, /10 minutes/);
    assert.equal((await expectStatus(service.call('/mfa/', { token }), 200)).enabled, false);
  });

  test('a pending enrolment dies after 5 wrong codes: then even the right one is refused, and a new request starts again', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const app = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    for (let attempt = 0; attempt < 5; attempt++) {
      assert.match((await expectStatus(verifyTotp(token, wrongCodeFor(app)), 400)).error_description, /wrong/);
    }
    // Past the guess budget's wait, so that only the enrolment's own limit answers.
    service.clock.advance(61);
    const dead = await expectStatus(verifyTotp(token, codeOf(app)), 400);
    assert.equal(dead.error, 'invalid_mfa_code');
    assert.match(dead.error_description, /5 wrong codes .* start again/);
    const fresh = await service.accessToken(username, PASSWORD);
    const next = OTPAuth.URI.parse((await expectStatus(requestTotp(fresh), 200)).otpauth_uri) as OTPAuth.TOTP;
    await expectStatus(verifyTotp(fresh, codeOf(next)), 200);
  });

  test('of 20 simultaneous wrong codes for a pending enrolment, at most 5 are judged; they count in the guess budget', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const app = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    const responses = await Promise.all(Array.from({ length: 20 }, () => verifyTotp(token, wrongCodeFor(app))));
    const bodies = await Promise.all(
      responses.map((response) => response.json() as Promise<{ error_description: string }>),
    );
    const judged = bodies.filter((body) => /the code is wrong/.test(body.error_description)).length;
    assert.ok(judged >= 1 && judged <= 5, `judged ${judged}`);
    assert.ok(responses.every((response) => response.status === 400 || response.status === 429));
    // The guess budget saw them: a new enrolment's right code now waits, as a login's second factor would.
    const next = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    const waiting = await expectStatus(verifyTotp(token, codeOf(next)), 429);
    assert.equal(waiting.error, 'mfa_throttled');
    service.clock.advance(61);
    await expectStatus(verifyTotp(token, codeOf(next)), 200);
  });

  test('the enrolment’s own limit holds under concurrency: with the guess budget freed by a login, of 20 simultaneous wrong codes only the one it has left is judged', async () => {
    const user = await enrolledUser();
    const strong = await strongToken(user);
    const second = OTPAuth.URI.parse((await expectStatus(requestTotp(strong), 200)).otpauth_uri) as OTPAuth.TOTP;
    for (let attempt = 0; attempt < 4; attempt++) {
      assert.match((await expectStatus(verifyTotp(strong, wrongCodeFor(second)), 400)).error_description, /wrong/);
    }
    // A login with the first app ends the run of wrong guesses: the guess budget would judge five
    // more now, the enrolment has one left.
    const fresh = await strongToken(user);
    const responses = await Promise.all(Array.from({ length: 20 }, () => verifyTotp(fresh, wrongCodeFor(second))));
    const answers = await Promise.all(
      responses.map(async (response) => ({
        status: response.status,
        ...((await response.json()) as { error: string; error_description: string }),
      })),
    );
    const judged = answers.filter((answer) => /the code is wrong/.test(answer.error_description));
    assert.equal(judged.length, 1, JSON.stringify(answers));
    const closed = answers.filter((answer) => /had 5 wrong codes and is closed/.test(answer.error_description));
    assert.equal(closed.length, 19, JSON.stringify(answers));
    assert.ok(answers.every((answer) => answer.status === 400 && answer.error === 'invalid_mfa_code'));
    // Dead: the right code is refused too, and the app was not added.
    const dead = await expectStatus(verifyTotp(fresh, codeOf(second)), 400);
    assert.match(dead.error_description, /had 5 wrong codes and is closed/);
    assert.equal((await expectStatus(service.call('/mfa/factors/', { token: fresh }), 200)).factors.length, 1);
  });

  test('a code the guess budget refuses (429) spends none of the enrolment’s tries: after the wait, the one try left enrols with the right code', async () => {
    const user = await enrolledUser();
    const strong = await strongToken(user);
    const second = OTPAuth.URI.parse((await expectStatus(requestTotp(strong), 200)).otpauth_uri) as OTPAuth.TOTP;
    for (let attempt = 0; attempt < 4; attempt++) {
      assert.match((await expectStatus(verifyTotp(strong, wrongCodeFor(second)), 400)).error_description, /wrong/);
    }
    // A fifth wrong guess at a login, not at the enrolment: the budget waits, the enrolment has one try left.
    const guessed = await expectStatus(
      service.login(user.username, PASSWORD, { mfa_code: wrongCodeFor(user.app) }),
      400,
    );
    assert.equal(guessed.error, 'invalid_grant');
    for (const code of [wrongCodeFor(second), codeOf(second), wrongCodeFor(second)]) {
      const refused = await verifyTotp(strong, code);
      const body = (await refused.json()) as { error: string; error_description: string };
      assert.deepEqual([refused.status, body.error], [429, 'mfa_throttled'], body.error_description);
    }
    service.clock.advance(61);
    assert.deepEqual(await expectStatus(verifyTotp(strong, codeOf(second)), 200), {
      enabled: true,
      challenge_type: 'totp',
      phone_number: '',
    });
    assert.equal((await expectStatus(service.call('/mfa/factors/', { token: strong }), 200)).factors.length, 2);
  });

  test('in a burst the guess budget stops, the codes it refuses spend none of the enrolment’s tries: of 20 wrong codes at once with one guess left, one is judged, and after the wait the right code enrols', async () => {
    const user = await enrolledUser();
    const strong = await strongToken(user);
    const second = OTPAuth.URI.parse((await expectStatus(requestTotp(strong), 200)).otpauth_uri) as OTPAuth.TOTP;
    // Four wrong guesses at logins: the budget has one guess left before its wait, the enrolment all five.
    for (let attempt = 0; attempt < 4; attempt++) {
      const guessed = await expectStatus(
        service.login(user.username, PASSWORD, { mfa_code: wrongCodeFor(user.app) }),
        400,
      );
      assert.equal(guessed.error, 'invalid_grant');
    }
    const responses = await Promise.all(Array.from({ length: 20 }, () => verifyTotp(strong, wrongCodeFor(second))));
    const answers = await Promise.all(
      responses.map(async (response) => [response.status, ((await response.json()) as { error: string }).error]),
    );
    assert.equal(answers.filter(([status]) => status === 400).length, 1, JSON.stringify(answers));
    assert.equal(answers.filter(([, error]) => error === 'mfa_throttled').length, 19, JSON.stringify(answers));
    // The enrolment spent one try of five: past the budget's wait, the right code adds the app.
    service.clock.advance(61);
    await expectStatus(verifyTotp(strong, codeOf(second)), 200);
    assert.equal((await expectStatus(service.call('/mfa/factors/', { token: strong }), 200)).factors.length, 2);
  });

  test('a new request replaces the pending one: the first secret no longer verifies', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const first = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    const second = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    await expectStatus(verifyTotp(token, codeOf(first)), 400);
    await expectStatus(verifyTotp(token, codeOf(second)), 200);
  });

  test('names are 1 to 64 printable characters', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    for (const name of ['', 'x'.repeat(65), 'line\nbreak', 42]) {
      assert.equal((await expectStatus(requestTotp(token, { name }), 400)).error, 'invalid_request');
    }
    await expectStatus(requestTotp(token, { name: 'Téléphone de Zoë 📱' }), 200);
  });

  test('the secret is stored sealed and never logged', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const start = await expectStatus(requestTotp(token), 200);
    const secretBytes = Buffer.from(OTPAuth.Secret.fromBase32(start.secret).bytes);
    const dump = await service.dumpDatabase();
    for (const form of [
      start.secret,
      secretBytes.toString('base64url'),
      secretBytes.toString('base64'),
      secretBytes.toString('hex'),
    ]) {
      assert.ok(!dump.includes(form), 'the database holds the secret in clear');
      assert.ok(!service.log().includes(form), 'the log holds the secret');
    }
  });
});

describe('logging in with an authenticator app', () => {
  test('the password alone answers mfa_required with mfa_type totp and sends no SMS; a code gives amr pwd+otp', async () => {
    const user = await enrolledUser();
    const asked = service.twilio.requestCount;
    assert.deepEqual(await expectStatus(service.login(user.username, PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'totp',
    });
    assert.equal(service.twilio.requestCount, asked, 'no SMS');
    const tokens = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200);
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'otp']);
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: tokens.access_token }), 200);
    assert.ok(factors[0].last_used_at, 'last_used_at is set');
  });

  test('a code is accepted one step either side of now, not two', async () => {
    const user = await enrolledUser();
    service.clock.advance(60); // clear of the step that verified the enrolment
    for (const offset of [-2, 2]) {
      await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app, offset) }), 400);
    }
    await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app, -1) }), 200);
    await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app, 1) }), 200);
  });

  test('no replay: a step once accepted, or any earlier step, is refused', async () => {
    const user = await enrolledUser();
    const code = codeOf(user.app);
    await expectStatus(service.login(user.username, PASSWORD, { mfa_code: code }), 200);
    const replay = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: code }), 400);
    assert.equal(replay.error, 'invalid_grant');
    assert.match(replay.error_description, /already used/);
    // The step before, still inside the drift window, is older than the one accepted.
    await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app, -1) }), 400);
    // The code that verified the enrolment is never accepted either.
  });

  test('the code that verified the enrolment does not log in', async () => {
    const username = `totp-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const app = OTPAuth.URI.parse((await expectStatus(requestTotp(token), 200)).otpauth_uri) as OTPAuth.TOTP;
    const code = codeOf(app);
    await expectStatus(verifyTotp(token, code), 200);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 400);
  });

  test('of 20 simultaneous logins with one valid code, exactly one gets tokens', async () => {
    const user = await enrolledUser();
    const code = codeOf(user.app);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => service.login(user.username, PASSWORD, { mfa_code: code })),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses}`);
    assert.ok(
      statuses.every((status) => [200, 400, 429].includes(status)),
      `statuses: ${statuses}`,
    );
  });
});

describe('several factors (CONTRACT §10, §13)', () => {
  /** A user with SMS (the first, so the default) and an authenticator app. */
  async function smsAndTotpUser() {
    const phone = nextPhone();
    const { username, token } = await service.createUserWithMfa(`both-${++userCount}`, PASSWORD, phone);
    const start = await expectStatus(requestTotp(token), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    const status = await expectStatus(verifyTotp(token, codeOf(app)), 200);
    assert.deepEqual(status, { enabled: true, challenge_type: 'sms', phone_number: phone });
    service.clock.advance(30);
    return { username, token, app, phone, totpId: start.factor_id as string };
  }

  test('adding an app while MFA is on needs a login that used a second factor', async () => {
    const phone = nextPhone();
    const name = `both-${++userCount}`;
    await service.createUser(name, PASSWORD);
    const weak = await service.accessToken(name, PASSWORD);
    await service.enrolSms(weak, phone);
    assert.equal((await expectStatus(requestTotp(weak), 401)).error, 'insufficient_user_authentication');
  });

  test('the default is asked for, mfa_types lists every type, and mfa_type picks another', async () => {
    const user = await smsAndTotpUser();
    const sent = service.twilio.messages.length;
    assert.deepEqual(await expectStatus(service.login(user.username, PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'sms',
      mfa_types: ['sms', 'totp'],
    });
    assert.equal(service.twilio.messages.length, sent + 1, 'the default (SMS) sent a code');
    service.clock.advance(31);
    assert.deepEqual(await expectStatus(service.login(user.username, PASSWORD, { mfa_type: 'totp' }), 200), {
      mfa_required: true,
      mfa_type: 'totp',
      mfa_types: ['sms', 'totp'],
    });
    assert.equal(service.twilio.messages.length, sent + 1, 'asking for the app sends no SMS');
    const unknown = await expectStatus(service.login(user.username, PASSWORD, { mfa_type: 'webauthn' }), 400);
    assert.equal(unknown.error, 'invalid_request');
    assert.match(unknown.error_description, /sms, totp/);
  });

  test('mfa_type with MFA off is refused too, changing nothing: the user has no second factor to ask for', async () => {
    const name = `no-mfa-${++userCount}`;
    await service.createUser(name, PASSWORD);
    for (const mfaType of ['sms', 'carrier-pigeon']) {
      const refused = await expectStatus(service.login(name, PASSWORD, { mfa_type: mfaType }), 400);
      assert.equal(refused.error, 'invalid_request');
      assert.match(refused.error_description, /no second factor; send no mfa_type/);
    }
    assert.ok((await expectStatus(service.login(name, PASSWORD), 200)).access_token);
  });

  test('mfa_code is checked against the app and against a live SMS code; amr says which', async () => {
    const user = await smsAndTotpUser();
    const viaApp = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200);
    assert.deepEqual(decodeJwt(viaApp.access_token).amr, ['pwd', 'otp']);
    await expectStatus(service.login(user.username, PASSWORD), 200);
    const smsCode = service.twilio.lastCodeFor(`+${user.phone}`);
    const viaSms = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: smsCode }), 200);
    assert.deepEqual(decodeJwt(viaSms.access_token).amr, ['pwd', 'sms']);
  });

  test('PATCH renames a factor and makes it the default; GET /mfa/ follows', async () => {
    const user = await smsAndTotpUser();
    const strong = (await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200))
      .access_token;
    const patch = (body: unknown, token = strong) =>
      service.call(`/mfa/factors/${user.totpId}/`, { method: 'PATCH', token, body });
    const renamed = await expectStatus(patch({ name: 'Work phone' }), 200);
    assert.equal(renamed.name, 'Work phone');
    assert.equal(renamed.is_default, false);
    const made = await expectStatus(patch({ is_default: true }), 200);
    assert.equal(made.is_default, true);
    assert.equal((await expectStatus(service.call('/mfa/', { token: strong }), 200)).challenge_type, 'totp');
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: strong }), 200);
    assert.deepEqual(
      factors.map((factor: { type: string; is_default: boolean }) => [factor.type, factor.is_default]),
      [
        ['sms', false],
        ['totp', true],
      ],
    );
    for (const bad of [{}, { is_default: false }, { name: '' }, { name: 'x'.repeat(65) }, { nickname: 'x' }]) {
      assert.equal((await expectStatus(patch(bad), 400)).error, 'invalid_request', JSON.stringify(bad));
    }
    await expectStatus(
      service.call('/mfa/factors/no-such-factor/', { method: 'PATCH', token: strong, body: { name: 'x' } }),
      404,
    );
  });

  test('DELETE removes one factor (the default passes on); removing the last turns MFA off', async () => {
    const user = await smsAndTotpUser();
    const strong = (await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200))
      .access_token;
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: strong }), 200);
    const smsId = factors.find((factor: { type: string }) => factor.type === 'sms').id;
    await expectStatus(service.call(`/mfa/factors/${smsId}/`, { method: 'DELETE', token: strong }), 204);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: strong }), 200), {
      enabled: true,
      challenge_type: 'totp',
      phone_number: '',
    });
    await expectStatus(service.call(`/mfa/factors/${smsId}/`, { method: 'DELETE', token: strong }), 404);
    await expectStatus(service.call(`/mfa/factors/${user.totpId}/`, { method: 'DELETE', token: strong }), 204);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: strong }), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: '',
    });
    assert.deepEqual(decodeJwt((await expectStatus(service.login(user.username, PASSWORD), 200)).access_token).amr, [
      'pwd',
    ]);
  });

  test('removing a factor or changing the default needs a second-factor login, and ends the other logins', async () => {
    // A password-only login that turned MFA on keeps working, but is not enough here.
    const phone = nextPhone();
    const name = `both-${++userCount}`;
    await service.createUser(name, PASSWORD);
    const weak = await service.accessToken(name, PASSWORD);
    await service.enrolSms(weak, phone);
    const [smsFactor] = (await expectStatus(service.call('/mfa/factors/', { token: weak }), 200)).factors;
    const refused = await expectStatus(
      service.call(`/mfa/factors/${smsFactor.id}/`, { method: 'DELETE', token: weak }),
      401,
    );
    assert.equal(refused.error, 'insufficient_user_authentication');
    await expectStatus(service.login(name, PASSWORD), 200);
    const viaSms = await service.accessToken(name, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${phone}`) });
    const start = await expectStatus(requestTotp(viaSms), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    await expectStatus(verifyTotp(viaSms, codeOf(app)), 200);
    service.clock.advance(30);
    const user = { username: name, app, totpId: start.factor_id as string };
    // Adding the app ended every other login, the weak one included, but not the one that added it.
    await expectStatus(service.call('/mfa/', { token: weak }), 401);
    await expectStatus(service.call('/mfa/', { token: viaSms }), 200);
    const other = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200);
    service.clock.advance(30);
    const remover = await expectStatus(service.login(user.username, PASSWORD, { mfa_code: codeOf(user.app) }), 200);
    await expectStatus(
      service.call(`/mfa/factors/${user.totpId}/`, { method: 'DELETE', token: remover.access_token }),
      204,
    );
    await expectStatus(service.call('/mfa/', { token: other.access_token }), 401);
    await expectStatus(service.call('/mfa/', { token: remover.access_token }), 200);
  });

  test('at most 5 authenticator apps: the sixth is 409 too_many_factors', async () => {
    const first = await enrolledUser();
    let strong = await strongToken(first);
    for (let app = 2; app <= 5; app++) {
      const start = await expectStatus(requestTotp(strong), 200);
      const added = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
      await expectStatus(verifyTotp(strong, codeOf(added)), 200);
      service.clock.advance(30);
      strong = await strongToken(first);
    }
    const refused = await expectStatus(requestTotp(strong), 409);
    assert.equal(refused.error, 'too_many_factors');
  });
});
