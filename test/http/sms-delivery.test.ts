import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { expectStatus, nextPhone, type Service, type ServiceOptions, startService } from '../support/service.js';
import { expectError, retryAfterOf, startOfNextHour } from '../support/sms-calls.js';

const PASSWORD = 'correct horse battery';
// The Twilio settings test/support/service.ts gives every service.
const ACCOUNT_SID = 'AC00000000000000000000000000000001';
const AUTH_TOKEN = 'twilio-auth-token-for-tests';
const FROM = '+15005550006';
const MESSAGING_SERVICE_SID = 'MG00000000000000000000000000000001';
const GB_PHONE = '447400123456';
/** In Ofcom's range for drama: possible, but assigned to no one, so not valid (CONTRACT §15). */
const GB_DRAMA_PHONE = '447700900123';

const NO_MFA = { enabled: false, challenge_type: '', phone_number: '' };
const MFA_REQUIRED = { mfa_required: true, mfa_type: 'sms' };
const HOUR_MS = 3_600_000;

/** A one-second Twilio deadline instead of ten, so that "Twilio hangs" costs a second of real time. */
const shortTwilioTimeout: ServiceOptions['adjust'] = (config) =>
  config.sms.kind === 'twilio' ? { ...config, sms: { ...config.sms, timeoutMs: 1000 } } : config;

/**
 * A TCP relay in front of the fake Twilio. `cut()` closes its port, so the service meets a refused
 * connection as in a provider outage; `restore()` listens on the same port again. It keeps every
 * byte the service sent, to check the request line and headers the fake does not record.
 */
async function startRelay() {
  let targetPort = 0;
  let received = '';
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      received += chunk;
    });
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const port = address.port;
  async function cut() {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  return {
    url: `http://127.0.0.1:${port}`,
    /** Everything the service sent through the relay so far. */
    get received() {
      return received;
    },
    forwardTo(url: string) {
      targetPort = Number(new URL(url).port);
    },
    cut,
    async restore() {
      if (!server.listening) await listen(port);
    },
    async close() {
      if (server.listening) await cut();
    },
  };
}

type Relay = Awaited<ReturnType<typeof startRelay>>;

let userCount = 0;
/** A fresh user without MFA and a password-only token for them. */
async function freshUser(on: Service) {
  const username = `sms-${++userCount}`;
  await on.createUser(username, PASSWORD);
  return { username, token: await on.accessToken(username, PASSWORD) };
}

function freshUsername() {
  return `sms-${++userCount}`;
}

function requestCode(on: Service, token: string, phone: string) {
  return on.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } });
}

function verify(on: Service, token: string, code: string) {
  return on.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

function mfaStatus(on: Service, token: string) {
  return expectStatus(on.call('/mfa/', { token }), 200);
}

function messagesTo(on: Service, phone: string) {
  return on.twilio.messages.filter((message) => message.to === `+${phone}`);
}

let service: Service;
let relay: Relay;
before(async () => {
  relay = await startRelay();
  service = await startService({ env: { TWILIO_API_URL: relay.url }, adjust: shortTwilioTimeout });
  relay.forwardTo(service.twilio.url);
});
after(async () => {
  await service.close();
  await relay.close();
});

describe('the message Twilio receives', () => {
  test('is a form POST to the account’s Messages resource, with Basic auth, To, From and a Body naming the service and the code', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    const receivedBefore = relay.received.length;
    await expectStatus(requestCode(service, token, PHONE), 200);

    const message = service.twilio.messages.at(-1);
    assert.ok(message);
    assert.equal(message.accountSid, ACCOUNT_SID);
    assert.equal(message.authorization, `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`);
    assert.equal(message.to, `+${PHONE}`);
    assert.equal(message.from, FROM);
    assert.equal(message.messagingServiceSid, undefined);
    const code = /^Your MFA verification code is (\d{6})\b/.exec(message.body)?.[1];
    assert.ok(code, `body: ${message.body}`);

    const wire = relay.received.slice(receivedBefore);
    assert.match(wire, new RegExp(`^POST /2010-04-01/Accounts/${ACCOUNT_SID}/Messages\\.json HTTP/1\\.1\r\n`));
    assert.match(wire, /\r\ncontent-type: application\/x-www-form-urlencoded\b/i);

    // The code in the text is the one that works, and neither the text nor the full number is logged.
    assert.equal((await expectStatus(verify(service, token, code), 200)).enabled, true);
    assert.ok(!service.log().includes(message.body), 'the SMS text is not logged');
    assert.ok(!service.log().includes(PHONE), 'the full phone number is not logged');
  });

  describe('with TWILIO_MESSAGING_SERVICE_SID instead of TWILIO_FROM', () => {
    let viaMessagingService: Service;
    before(async () => {
      viaMessagingService = await startService({
        env: { TWILIO_FROM: '', TWILIO_MESSAGING_SERVICE_SID: MESSAGING_SERVICE_SID },
      });
    });
    after(() => viaMessagingService.close());

    test('the message carries MessagingServiceSid and no From', async () => {
      const PHONE = nextPhone();
      const { token } = await freshUser(viaMessagingService);
      await expectStatus(requestCode(viaMessagingService, token, PHONE), 200);
      const message = viaMessagingService.twilio.messages.at(-1);
      assert.ok(message);
      assert.equal(message.to, `+${PHONE}`);
      assert.equal(message.messagingServiceSid, MESSAGING_SERVICE_SID);
      assert.equal(message.from, undefined);
      assert.match(message.body, /^Your MFA verification code is \d{6}\b/);
    });
  });
});

interface ProviderFailure {
  what: string;
  status: number;
  error: string;
  /** A refusal is about the number: the same number keeps failing, another one works. */
  isAboutTheNumber: boolean;
  /** Makes the provider fail for messages to `e164`. */
  fail(e164: string): void | Promise<void>;
  /** Makes the provider healthy again (a refused number stays refused). */
  recover(): void | Promise<void>;
}

const PROVIDER_FAILURES: ProviderFailure[] = [
  ...[21211, 21614].map((twilioCode) => ({
    what: `Twilio refuses the number (error ${twilioCode})`,
    status: 400,
    error: 'phone_number_rejected',
    isAboutTheNumber: true,
    fail: (e164: string) => service.twilio.refuse(e164, twilioCode),
    recover: () => {},
  })),
  {
    what: 'Twilio answers 500',
    status: 502,
    error: 'sms_unavailable',
    isAboutTheNumber: false,
    fail: () => service.twilio.behave('fail'),
    recover: () => service.twilio.behave('deliver'),
  },
  {
    what: 'Twilio refuses the connection',
    status: 502,
    error: 'sms_unavailable',
    isAboutTheNumber: false,
    fail: () => relay.cut(),
    recover: () => relay.restore(),
  },
];

describe('a provider that does not answer in time (CONTRACT §15: a timeout is a send)', () => {
  test('enrolment: 504 sms_timeout; the cooldown is spent, and the code works if the message arrives', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    service.twilio.behave('hang');
    try {
      const { body } = await expectError(requestCode(service, token, PHONE), 504, 'sms_timeout');
      assert.match(body.error_description, /may still arrive/);
    } finally {
      service.twilio.behave('deliver');
    }
    const asked = service.twilio.requestCount;
    await expectError(requestCode(service, token, PHONE), 429, 'sms_cooldown');
    assert.equal(service.twilio.requestCount, asked, 'no second SMS inside the cooldown');
    // The message Twilio took did arrive: its code enrols the number.
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    assert.deepEqual(await expectStatus(verify(service, token, code), 200), {
      enabled: true,
      challenge_type: 'sms',
      phone_number: PHONE,
    });
  });

  test('login: 504 sms_timeout; an immediate login sends nothing more, and the code that arrived logs in', async () => {
    const PHONE = nextPhone();
    const username = freshUsername();
    await service.createUserWithMfa(username, PASSWORD, PHONE);
    service.twilio.behave('hang');
    try {
      await expectError(service.login(username, PASSWORD), 504, 'sms_timeout');
    } finally {
      service.twilio.behave('deliver');
    }
    const asked = service.twilio.requestCount;
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(service.twilio.requestCount, asked, 'the timeout spent the cooldown');
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 200);
  });
});

describe('provider failures on enrolment', () => {
  for (const failure of PROVIDER_FAILURES) {
    test(`when ${failure.what}: ${failure.status} ${failure.error}, no code pending, status unchanged, and an immediate retry works`, async () => {
      const PHONE = nextPhone();
      const { token } = await freshUser(service);
      const delivered = service.twilio.messages.length;

      await failure.fail(`+${PHONE}`);
      try {
        await expectError(requestCode(service, token, PHONE), failure.status, failure.error);
      } finally {
        await failure.recover();
      }
      assert.equal(service.twilio.messages.length, delivered, 'nothing was delivered');
      assert.deepEqual(await mfaStatus(service, token), NO_MFA);
      const { body } = await expectError(verify(service, token, '123456'), 400, 'invalid_mfa_code');
      assert.match(body.error_description, /no code/i);

      // No clock advance: a failed send spends no cooldown.
      const retryPhone = failure.isAboutTheNumber ? nextPhone() : PHONE;
      assert.deepEqual(await expectStatus(requestCode(service, token, retryPhone), 200), {
        enabled: false,
        challenge_type: '',
        phone_number: retryPhone,
      });
      assert.equal(service.twilio.messages.length, delivered + 1);
      const code = service.twilio.lastCodeFor(`+${retryPhone}`);
      assert.equal((await expectStatus(verify(service, token, code), 200)).phone_number, retryPhone);
      assert.ok(!service.log().includes(PHONE), 'the full phone number is not logged');
    });
  }
});

describe('provider failures on login', () => {
  for (const failure of PROVIDER_FAILURES) {
    const then = failure.isAboutTheNumber
      ? 'the next immediate login asks Twilio again'
      : 'once Twilio recovers, an immediate login sends the code';
    test(`when ${failure.what}, a login without a code answers ${failure.status} ${failure.error}; ${then}`, async () => {
      const PHONE = nextPhone();
      const username = freshUsername();
      await service.createUserWithMfa(username, PASSWORD, PHONE);
      const delivered = messagesTo(service, PHONE).length;

      await failure.fail(`+${PHONE}`);
      try {
        await expectError(service.login(username, PASSWORD), failure.status, failure.error);
        if (failure.isAboutTheNumber) {
          // Had the failed send spent the cooldown, this would be a 200 mfa_required with no SMS behind it.
          const asked = service.twilio.requestCount;
          await expectError(service.login(username, PASSWORD), failure.status, failure.error);
          assert.equal(service.twilio.requestCount, asked + 1, 'the second login asked Twilio again');
        }
      } finally {
        await failure.recover();
      }
      assert.equal(messagesTo(service, PHONE).length, delivered, 'nothing was delivered');
      if (failure.isAboutTheNumber) return;

      assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
      assert.equal(messagesTo(service, PHONE).length, delivered + 1, 'the login sent an SMS');
      const tokens = await expectStatus(
        service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${PHONE}`) }),
        200,
      );
      assert.equal(typeof tokens.access_token, 'string');
    });
  }
});

describe('resend cooldown', () => {
  test('a second enrolment request within 30 s answers 429 sms_cooldown with an honest Retry-After and sends nothing', async () => {
    const FIRST = nextPhone();
    const SECOND = nextPhone();
    const { token } = await freshUser(service);
    await expectStatus(requestCode(service, token, FIRST), 200);
    const asked = service.twilio.requestCount;

    const { headers } = await expectError(requestCode(service, token, SECOND), 429, 'sms_cooldown');
    const retryAfter = retryAfterOf(headers);
    assert.ok(retryAfter >= 1 && retryAfter <= 30, `Retry-After: ${retryAfter}`);
    assert.equal(service.twilio.requestCount, asked, 'no SMS was attempted');
    assert.equal((await mfaStatus(service, token)).phone_number, FIRST, 'the pending number did not change');

    service.clock.advance(10);
    const later = retryAfterOf((await expectError(requestCode(service, token, SECOND), 429, 'sms_cooldown')).headers);
    assert.ok(later >= 1 && later <= 20, `Retry-After 10 s later: ${later}`);
    assert.equal(service.twilio.requestCount, asked, 'no SMS was attempted');

    service.clock.advance(later);
    await expectStatus(requestCode(service, token, SECOND), 200);
    assert.equal(messagesTo(service, SECOND).length, 1, 'after the cooldown the SMS went out');
  });

  test('inside the enrolment cooldown the code already sent still verifies', async () => {
    const FIRST = nextPhone();
    const { token } = await freshUser(service);
    await expectStatus(requestCode(service, token, FIRST), 200);
    await expectError(requestCode(service, token, nextPhone()), 429, 'sms_cooldown');
    const enabled = await expectStatus(verify(service, token, service.twilio.lastCodeFor(`+${FIRST}`)), 200);
    assert.deepEqual(enabled, { enabled: true, challenge_type: 'sms', phone_number: FIRST });
  });

  test('a login without a code inside the cooldown answers mfa_required and sends nothing; the code already sent logs in', async () => {
    const PHONE = nextPhone();
    const username = freshUsername();
    await service.createUserWithMfa(username, PASSWORD, PHONE);

    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(service, PHONE).length, 3, 'enrolment, first login, this login');
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    const asked = service.twilio.requestCount;

    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    service.clock.advance(29);
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(service.twilio.requestCount, asked, 'no SMS inside the cooldown');

    const tokens = await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 200);
    assert.equal(typeof tokens.access_token, 'string');

    service.clock.advance(1);
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(service, PHONE).length, 4, '30 s after the last SMS a login sends another');
  });

  test('the cooldown lasts only while the code sent is alive: after logging in with it, the next login gets a fresh code at once', async () => {
    const PHONE = nextPhone();
    const username = freshUsername();
    await service.createUserWithMfa(username, PASSWORD, PHONE);
    await expectStatus(service.login(username, PASSWORD), 200);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${PHONE}`) }), 200);
    // No clock advance: well inside the 30 s of the first SMS.
    const delivered = messagesTo(service, PHONE).length;
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(service, PHONE).length, delivered + 1, 'a fresh code went out');
    await expectStatus(service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${PHONE}`) }), 200);
  });

  test('a code killed by 5 wrong attempts ends the cooldown too', async () => {
    const PHONE = nextPhone();
    const username = freshUsername();
    await service.createUserWithMfa(username, PASSWORD, PHONE);
    await expectStatus(service.login(username, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(`+${PHONE}`);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    for (let attempt = 0; attempt < 4; attempt++) {
      await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 400);
    }
    // Four wrong codes leave the code alive: no new SMS inside the cooldown.
    const delivered = messagesTo(service, PHONE).length;
    await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(messagesTo(service, PHONE).length, delivered);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 400);
    // The fifth killed it: the next login sends a fresh one.
    await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(messagesTo(service, PHONE).length, delivered + 1);
  });

  test('enrolment and login have separate cooldowns', async () => {
    const PHONE = nextPhone();
    const { username, token } = await freshUser(service);
    await expectStatus(requestCode(service, token, PHONE), 200);
    await expectStatus(verify(service, token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);

    // Login right after the enrolment SMS: the login purpose has its own cooldown, still unspent.
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(service, PHONE).length, 2, 'a login SMS right after the enrolment SMS');

    // Enrolment right after a login SMS (the enrolment cooldown having passed) is sent too.
    service.clock.advance(31);
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    const strong = await service.accessToken(username, PASSWORD, {
      mfa_code: service.twilio.lastCodeFor(`+${PHONE}`),
    });
    assert.equal(messagesTo(service, PHONE).length, 3);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token: strong }), 204);
    await expectStatus(requestCode(service, strong, PHONE), 200);
    assert.equal(messagesTo(service, PHONE).length, 4, 'an enrolment SMS right after the login SMS');
  });
});

describe('simultaneous logins', () => {
  // Five: the login throttle judges at most five simultaneous attempts for one username (CONTRACT §13).
  test('of 5 simultaneous logins without a code, exactly one sends an SMS and all answer mfa_required', async () => {
    const PHONE = nextPhone();
    const username = freshUsername();
    await service.createUserWithMfa(username, PASSWORD, PHONE);
    const delivered = messagesTo(service, PHONE).length;
    const asked = service.twilio.requestCount;

    const responses = await Promise.all(Array.from({ length: 5 }, () => service.login(username, PASSWORD)));
    const answers = await Promise.all(
      responses.map(async (response) => ({ status: response.status, body: await response.json() })),
    );
    for (const answer of answers) assert.deepEqual(answer, { status: 200, body: MFA_REQUIRED });
    assert.equal(messagesTo(service, PHONE).length, delivered + 1, 'exactly one SMS');
    assert.equal(service.twilio.requestCount, asked + 1, 'exactly one request to Twilio');

    const tokens = await expectStatus(
      service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${PHONE}`) }),
      200,
    );
    assert.equal(typeof tokens.access_token, 'string');
  });
});

describe('per-user hourly cap (SMS_USER_HOURLY_LIMIT=3)', () => {
  let capped: Service;
  before(async () => {
    capped = await startService({ env: { SMS_USER_HOURLY_LIMIT: '3' } });
  });
  after(() => capped.close());

  test('the 4th enrolment SMS for one user in an hour answers 429 sms_rate_limited with Retry-After and sends nothing; the next hour it works', async () => {
    startOfNextHour(capped);
    const { username, token } = await freshUser(capped);
    let lastPhone = '';
    for (let sent = 0; sent < 3; sent++) {
      lastPhone = nextPhone();
      await expectStatus(requestCode(capped, token, lastPhone), 200);
      capped.clock.advance(31);
    }
    const asked = capped.twilio.requestCount;

    const { headers } = await expectError(requestCode(capped, token, nextPhone()), 429, 'sms_rate_limited');
    const retryAfter = retryAfterOf(headers);
    assert.ok(retryAfter > 30 && retryAfter <= 3600, `Retry-After: ${retryAfter}`);
    assert.equal(capped.twilio.requestCount, asked, 'no SMS was attempted');
    assert.equal((await mfaStatus(capped, token)).phone_number, lastPhone, 'the pending number did not change');

    capped.clock.advance(retryAfter);
    const PHONE = nextPhone();
    // An hour on, the first access token has expired: log in again.
    await expectStatus(requestCode(capped, await capped.accessToken(username, PASSWORD), PHONE), 200);
    assert.equal(messagesTo(capped, PHONE).length, 1);
  });

  test('login SMS count towards the same cap: past it a login without a code answers 429 sms_rate_limited and sends nothing', async () => {
    startOfNextHour(capped);
    const PHONE = nextPhone();
    const username = freshUsername();
    // The enrolment SMS and the first login's: two this hour; this login's is the third.
    await capped.createUserWithMfa(username, PASSWORD, PHONE);
    assert.deepEqual(await expectStatus(capped.login(username, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(capped, PHONE).length, 3);
    capped.clock.advance(31);
    const asked = capped.twilio.requestCount;

    const { headers } = await expectError(capped.login(username, PASSWORD), 429, 'sms_rate_limited');
    assert.ok(retryAfterOf(headers) > 30);
    assert.equal(capped.twilio.requestCount, asked, 'no SMS was attempted');
  });

  test('refused and failed sends do not count towards it', async () => {
    startOfNextHour(capped);
    const { token } = await freshUser(capped);
    const REFUSED = nextPhone();
    capped.twilio.refuse(`+${REFUSED}`, 21211);
    await expectError(requestCode(capped, token, REFUSED), 400, 'phone_number_rejected');
    await expectError(requestCode(capped, token, REFUSED), 400, 'phone_number_rejected');
    capped.twilio.behave('fail');
    try {
      await expectError(requestCode(capped, token, nextPhone()), 502, 'sms_unavailable');
    } finally {
      capped.twilio.behave('deliver');
    }

    for (let sent = 0; sent < 3; sent++) {
      await expectStatus(requestCode(capped, token, nextPhone()), 200);
      capped.clock.advance(31);
    }
    await expectError(requestCode(capped, token, nextPhone()), 429, 'sms_rate_limited');
  });
});

describe('per-number hourly cap (SMS_NUMBER_HOURLY_LIMIT=2)', () => {
  let capped: Service;
  before(async () => {
    capped = await startService({ env: { SMS_NUMBER_HOURLY_LIMIT: '2' } });
  });
  after(() => capped.close());

  test('three users enrolling the same number: the third gets 429 sms_rate_limited and nothing is sent', async () => {
    const PHONE = nextPhone();
    for (let user = 0; user < 2; user++) {
      await expectStatus(requestCode(capped, (await freshUser(capped)).token, PHONE), 200);
    }
    const { token } = await freshUser(capped);
    const asked = capped.twilio.requestCount;
    const { headers } = await expectError(requestCode(capped, token, PHONE), 429, 'sms_rate_limited');
    assert.ok(retryAfterOf(headers) >= 1);
    assert.equal(capped.twilio.requestCount, asked, 'no SMS was attempted');
    assert.deepEqual(await mfaStatus(capped, token), NO_MFA);
    assert.equal(messagesTo(capped, PHONE).length, 2);

    // The cap is the number's, not the user's: the same user may still use another number at once.
    await expectStatus(requestCode(capped, token, nextPhone()), 200);
  });

  test("other accounts enrolling a user's number cannot stop that user's login codes (CONTRACT §15)", async () => {
    const PHONE = nextPhone();
    const victim = freshUsername();
    await capped.createUserWithMfa(victim, PASSWORD, PHONE);
    for (let attacker = 0; attacker < 3; attacker++) {
      await requestCode(capped, (await freshUser(capped)).token, PHONE);
    }
    const delivered = messagesTo(capped, PHONE).length;
    assert.deepEqual(await expectStatus(capped.login(victim, PASSWORD), 200), MFA_REQUIRED);
    assert.equal(messagesTo(capped, PHONE).length, delivered + 1, 'the login code went out');
    await expectStatus(capped.login(victim, PASSWORD, { mfa_code: capped.twilio.lastCodeFor(`+${PHONE}`) }), 200);
  });

  test('failed sends do not count towards it', async () => {
    const PHONE = nextPhone();
    const first = await freshUser(capped);
    const second = await freshUser(capped);
    const third = await freshUser(capped);
    capped.twilio.behave('fail');
    try {
      await expectError(requestCode(capped, first.token, PHONE), 502, 'sms_unavailable');
      await expectError(requestCode(capped, second.token, PHONE), 502, 'sms_unavailable');
    } finally {
      capped.twilio.behave('deliver');
    }
    await expectStatus(requestCode(capped, first.token, PHONE), 200);
    await expectStatus(requestCode(capped, second.token, PHONE), 200);
    assert.equal(messagesTo(capped, PHONE).length, 2);
    await expectError(requestCode(capped, third.token, PHONE), 429, 'sms_rate_limited');
  });
});

describe('the enrolment ceiling (SMS_ENROLMENT_HOURLY_LIMIT=3 of SMS_GLOBAL_HOURLY_LIMIT=10)', () => {
  let capped: Service;
  before(async () => {
    capped = await startService({ env: { SMS_ENROLMENT_HOURLY_LIMIT: '3', SMS_GLOBAL_HOURLY_LIMIT: '10' } });
    // The caps count per clock hour: keep the test inside one.
    const intoHourMs = capped.clock.now().getTime() % HOUR_MS;
    if (intoHourMs > HOUR_MS - 300_000) capped.clock.advance((HOUR_MS - intoHourMs) / 1000 + 1);
  });
  after(() => capped.close());

  test('past the enrolment ceiling enrolments answer 429, while logins still get their codes', async () => {
    const PHONE = nextPhone();
    const user = freshUsername();
    await capped.createUserWithMfa(user, PASSWORD, PHONE); // the first enrolment SMS
    for (let other = 0; other < 2; other++) {
      await expectStatus(requestCode(capped, (await freshUser(capped)).token, nextPhone()), 200);
    }
    const { body } = await expectError(
      requestCode(capped, (await freshUser(capped)).token, nextPhone()),
      429,
      'sms_rate_limited',
    );
    assert.match(body.error_description, /enrolment/);
    capped.clock.advance(31);
    assert.deepEqual(await expectStatus(capped.login(user, PASSWORD), 200), MFA_REQUIRED);
    await expectStatus(capped.login(user, PASSWORD, { mfa_code: capped.twilio.lastCodeFor(`+${PHONE}`) }), 200);
  });
});

describe('country allowlist (SMS_ALLOWED_COUNTRIES=GB)', () => {
  let gbOnly: Service;
  before(async () => {
    gbOnly = await startService({ env: { SMS_ALLOWED_COUNTRIES: 'GB' } });
  });
  after(() => gbOnly.close());

  test('a US number answers 400 phone_number_not_allowed and nothing is sent; a GB number then works at once', async () => {
    const US_PHONE = nextPhone();
    const { token } = await freshUser(gbOnly);
    await expectError(requestCode(gbOnly, token, US_PHONE), 400, 'phone_number_not_allowed');
    assert.equal(gbOnly.twilio.requestCount, 0, 'Twilio was not asked');
    assert.deepEqual(await mfaStatus(gbOnly, token), NO_MFA);

    assert.equal((await expectStatus(requestCode(gbOnly, token, GB_PHONE), 200)).phone_number, GB_PHONE);
    assert.equal(messagesTo(gbOnly, GB_PHONE).length, 1);
    const code = gbOnly.twilio.lastCodeFor(`+${GB_PHONE}`);
    assert.equal((await expectStatus(verify(gbOnly, token, code), 200)).enabled, true);
  });

  test('a possible GB number outside the assigned ranges (447700900123) is refused with 400 invalid_phone_number, and nothing is sent', async () => {
    const { token } = await freshUser(gbOnly);
    const asked = gbOnly.twilio.requestCount;
    const { body } = await expectError(requestCode(gbOnly, token, GB_DRAMA_PHONE), 400, 'invalid_phone_number');
    assert.match(body.error_description, /not a valid number/);
    assert.equal(gbOnly.twilio.requestCount, asked, 'Twilio was not asked');
    assert.deepEqual(await mfaStatus(gbOnly, token), NO_MFA);
  });
});
