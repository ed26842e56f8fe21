import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { runAdmin } from '../support/admin-cli.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import {
  expectError,
  freshUser,
  messagesTo,
  metricValue,
  requestCode,
  retryAfterOf,
  startOfNextHour,
  verifyCode,
} from '../support/sms-calls.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// CONTRACT §15 over HTTP: what can receive a code, the country and range budgets, the anomaly pause.

const NO_MFA = { enabled: false, challenge_type: '', phone_number: '' };
const MFA_REQUIRED = { mfa_required: true, mfa_type: 'sms' };
/** Leaves the country budgets and the range budget out of the way of what a test looks at. */
const NO_PAUSE = { SMS_ANOMALY_FLOOR: '1000000' };

/** Valid mobile numbers of a country, each in a range of its own (…xx00). */
function numbersOf(first: number) {
  let count = 0;
  return () => String(first + ++count * 100);
}
const nextNigerian = numbersOf(2_348_031_000_000);
const nextBritish = numbersOf(447_400_100_000);
const nextCanadian = numbersOf(16_132_000_001);

async function eventsOf(on: Service, userId: string) {
  const { events } = await expectStatus(on.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
  return events as { type: string; outcome: string; client_address: string | null; detail: Record<string, string> }[];
}

/** Runs the admin CLI (the built one, as `npm run admin` does) on the service's database. */
function admin(on: Service, args: string[], env: Record<string, string> = {}) {
  return runAdmin(on.config.databaseUrl, args, { env });
}

describe('what can receive a code (the default SMS_BLOCKED_LINE_TYPES)', () => {
  let service: Service;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  const refused = [
    { what: 'a US premium-rate number (1-900)', phone: '19005550123', reason: /premium-rate/ },
    { what: 'a GB premium-rate number (09)', phone: '449095551234', reason: /premium-rate/ },
    { what: 'a FR shared-cost number (0810)', phone: '33810123456', reason: /shared-cost/ },
    { what: 'a US toll-free number (1-800)', phone: '18005550123', reason: /toll-free/ },
    { what: 'a GB UAN (03)', phone: '443370201788', reason: /universal access/ },
    { what: 'a DE voicemail number', phone: '49163996506321', reason: /voicemail/ },
    { what: 'a GB pager number (076)', phone: '447640123456', reason: /pager/ },
    { what: 'a +881 satellite number', phone: '8816123456789', reason: /no country/ },
    { what: 'a +882 international network number', phone: '88216123456', reason: /no country/ },
    { what: 'a possible but unassigned +1 number (999)', phone: '19995550123', reason: /not a valid number/ },
    { what: 'a possible but unassigned GB number (07700 900)', phone: '447700900123', reason: /not a valid number/ },
  ];
  for (const { what, phone, reason } of refused) {
    test(`${what} answers 400 invalid_phone_number naming the reason; nothing is sent or kept`, async () => {
      const { token } = await freshUser(service);
      const asked = service.twilio.requestCount;
      const { body } = await expectError(requestCode(service, token, phone), 400, 'invalid_phone_number');
      assert.match(body.error_description, reason);
      assert.match(body.error_description, /phone_number/);
      assert.equal(service.twilio.requestCount, asked, 'Twilio was not asked');
      assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), NO_MFA);
      // Nothing was spent either: a valid number goes out at once.
      await expectStatus(requestCode(service, token, nextPhone()), 200);
    });
  }

  test('a VoIP number is accepted while VOIP is not listed', async () => {
    const { token } = await freshUser(service);
    const gbVoip = '445691958923';
    await expectStatus(requestCode(service, token, gbVoip), 200);
    assert.equal(messagesTo(service, gbVoip).length, 1);
  });

  test('a number verified before these rules (now refused for enrolment) still gets its login codes', async () => {
    const username = `fraud-legacy-${process.pid}`;
    const { userId } = await service.createUserWithMfa(username, 'correct horse battery', nextPhone());
    // As a release before CONTRACT §15 would have let it enrol.
    await service.execute(
      sql`update mfa_factor set phone_number = ${'19005550123'} where user_id = ${userId} and type = 'sms'`,
    );
    assert.deepEqual(await expectStatus(service.login(username, 'correct horse battery'), 200), MFA_REQUIRED);
    const code = service.twilio.lastCodeFor('+19005550123');
    await expectStatus(service.login(username, 'correct horse battery', { mfa_code: code }), 200);
  });
});

describe('SMS_BLOCKED_LINE_TYPES=VOIP,PREMIUM_RATE: the operator’s list replaces the default', () => {
  let service: Service;
  before(async () => {
    service = await startService({ env: { SMS_BLOCKED_LINE_TYPES: 'VOIP,PREMIUM_RATE' } });
  });
  after(() => service.close());

  test('a VoIP number is refused, naming VoIP; toll-free and satellite numbers, no longer listed, are sent', async () => {
    const { token } = await freshUser(service);
    const { body } = await expectError(requestCode(service, token, '445691958923'), 400, 'invalid_phone_number');
    assert.match(body.error_description, /VoIP/);
    for (const phone of ['18005550123', '8816123456789']) {
      const other = await freshUser(service);
      await expectStatus(requestCode(service, other.token, phone), 200);
      assert.equal(messagesTo(service, phone).length, 1, phone);
    }
    await expectError(requestCode(service, token, '19005550123'), 400, 'invalid_phone_number');
  });
});

describe('country budgets (SMS_COUNTRY_HOURLY_LIMIT=3,GB=2)', () => {
  let service: Service;
  let otherNode: Service | undefined;
  before(async () => {
    service = await startService({ env: { SMS_COUNTRY_HOURLY_LIMIT: '3,GB=2', ...NO_PAUSE } });
  });
  after(async () => {
    await otherNode?.close();
    await service.close();
  });

  test('past its budget a country answers 429 sms_rate_limited with Retry-After and sends nothing; other countries go on; the next hour it sends again', async () => {
    startOfNextHour(service);
    for (let sent = 0; sent < 2; sent++) {
      await expectStatus(requestCode(service, (await freshUser(service)).token, nextBritish()), 200);
    }
    const { token } = await freshUser(service);
    const asked = service.twilio.requestCount;
    const { body, headers } = await expectError(requestCode(service, token, nextBritish()), 429, 'sms_rate_limited');
    assert.match(body.error_description, /GB/);
    const retryAfter = retryAfterOf(headers);
    assert.ok(retryAfter > 3000 && retryAfter <= 3600, `Retry-After: ${retryAfter}`);
    assert.equal(service.twilio.requestCount, asked, 'Twilio was not asked');
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), NO_MFA);

    // The bare number is every other country's budget: three to Canada, then no more.
    for (let sent = 0; sent < 3; sent++) {
      await expectStatus(requestCode(service, (await freshUser(service)).token, nextCanadian()), 200);
    }
    await expectError(requestCode(service, (await freshUser(service)).token, nextCanadian()), 429, 'sms_rate_limited');
    // The refused user is not held up for another country.
    await expectStatus(requestCode(service, token, nextPhone()), 200);

    service.clock.advance(retryAfter);
    const next = await freshUser(service);
    const PHONE = nextBritish();
    await expectStatus(requestCode(service, next.token, PHONE), 200);
    await expectStatus(verifyCode(service, next.token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
  });

  test('a failed send gives back what it took of the budget', async () => {
    startOfNextHour(service);
    service.twilio.behave('fail');
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        await expectError(
          requestCode(service, (await freshUser(service)).token, nextBritish()),
          502,
          'sms_unavailable',
        );
      }
    } finally {
      service.twilio.behave('deliver');
    }
    for (let sent = 0; sent < 2; sent++) {
      await expectStatus(requestCode(service, (await freshUser(service)).token, nextBritish()), 200);
    }
  });

  test('the budget is one for every node on the database', async () => {
    startOfNextHour(service);
    otherNode = await startService({
      env: { DATABASE_URL: service.config.databaseUrl, SMS_COUNTRY_HOURLY_LIMIT: '3,GB=2', ...NO_PAUSE },
    });
    otherNode.clock.advance((service.clock.now().getTime() - otherNode.clock.now().getTime()) / 1000);
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextBritish()), 200);
    await expectStatus(requestCode(otherNode, (await freshUser(otherNode)).token, nextBritish()), 200);
    await expectError(requestCode(service, (await freshUser(service)).token, nextBritish()), 429, 'sms_rate_limited');
    await expectError(
      requestCode(otherNode, (await freshUser(otherNode)).token, nextBritish()),
      429,
      'sms_rate_limited',
    );
  });
});

describe('the number-range budget (SMS_RANGE_HOURLY_LIMIT, default 5)', () => {
  let service: Service;
  before(async () => {
    service = await startService({ env: NO_PAUSE });
  });
  after(() => service.close());

  test('sequential numbers: the 6th enrolment SMS in an hour to one range answers 429 sms_rate_limited; the next range is untouched', async () => {
    startOfNextHour(service);
    const range = nextNigerian().slice(0, -2);
    for (let last = 10; last < 15; last++) {
      await expectStatus(requestCode(service, (await freshUser(service)).token, `${range}${last}`), 200);
    }
    const asked = service.twilio.requestCount;
    const { body, headers } = await expectError(
      requestCode(service, (await freshUser(service)).token, `${range}15`),
      429,
      'sms_rate_limited',
    );
    assert.match(body.error_description, /range/);
    assert.ok(retryAfterOf(headers) > 0);
    assert.equal(service.twilio.requestCount, asked, 'Twilio was not asked');
    const nextRange = String(Number(range) + 1);
    await expectStatus(requestCode(service, (await freshUser(service)).token, `${nextRange}00`), 200);
  });
});

describe('the anomaly pause, on a service with no history (SMS_ANOMALY_FLOOR=3)', () => {
  let service: Service;
  let receiver: WebhookReceiver;
  let webhookSecret: string;
  const env = { SMS_ANOMALY_FLOOR: '3', WEBHOOK_ALLOW_PRIVATE: 'true' };
  before(async () => {
    service = await startService({ env });
    receiver = await startWebhookReceiver();
    ({ secret: webhookSecret } = await expectStatus(
      service.call('/admin/webhooks', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { url: `${receiver.url}/paused`, events: ['sms.country_paused'] },
      }),
      201,
    ));
  });
  after(async () => {
    await service.close();
    await receiver.close();
  });

  /** Three enrolment SMS to Nigeria, from three accounts: as many as the floor lets through. */
  async function reachFloor() {
    for (let sent = 0; sent < 3; sent++) {
      await expectStatus(requestCode(service, (await freshUser(service)).token, nextNigerian()), 200);
    }
  }

  test('past the floor: 429 sms_country_paused until the hour ends, an audit event, the gauge; other countries and logins go on', async () => {
    startOfNextHour(service);
    const loginUser = `fraud-ng-login-${process.pid}`;
    const LOGIN_PHONE = nextNigerian();
    await service.createUserWithMfa(loginUser, 'correct horse battery', LOGIN_PHONE);
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextNigerian()), 200);
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextNigerian()), 200);

    const tripping = await freshUser(service);
    const asked = service.twilio.requestCount;
    const { body, headers } = await expectError(
      requestCode(service, tripping.token, nextNigerian()),
      429,
      'sms_country_paused',
    );
    assert.match(body.error_description, /NG/);
    const retryAfter = retryAfterOf(headers);
    assert.ok(retryAfter > 3000 && retryAfter <= 3600, `Retry-After: ${retryAfter}`);
    assert.equal(service.twilio.requestCount, asked, 'Twilio was not asked');
    // Still paused for the next account.
    await expectError(
      requestCode(service, (await freshUser(service)).token, nextNigerian()),
      429,
      'sms_country_paused',
    );

    const [paused] = (await eventsOf(service, tripping.userId)).filter((event) => event.type === 'sms_country_paused');
    assert.ok(paused, 'the pause is in the audit trail');
    assert.equal(paused.outcome, 'paused');
    assert.equal(paused.detail.country, 'NG');
    assert.equal(paused.detail.sends_this_hour, '3');
    assert.equal(paused.detail.threshold, '3');
    assert.equal(await metricValue(service, 'mfa_sms_country_paused{country="NG"}'), 1);
    // The pause reaches the operator's systems as a signed sms.country_paused event (CONTRACT §16).
    const [delivered] = await receiver.waitFor('/paused', 1);
    assert.ok(delivered);
    // Signed as the standardwebhooks package signs (its verify() would refuse the timestamp: this
    // service's clock was moved to the next hour).
    const { 'webhook-id': id = '', 'webhook-timestamp': timestamp = '0' } = delivered.headers;
    const expected = new Webhook(webhookSecret).sign(id, new Date(Number(timestamp) * 1000), delivered.body);
    assert.equal(delivered.headers['webhook-signature'], expected);
    const event = JSON.parse(delivered.body);
    assert.equal(event.type, 'sms.country_paused');
    assert.equal(event.data.country, 'NG');
    assert.equal(event.data.user_id, tripping.userId);
    assert.equal(event.data.paused_until, paused.detail.paused_until);
    assert.equal(
      await metricValue(
        service,
        'mfa_sms_sent_total{purpose="enrol",country_calling_code="234",outcome="suppressed_paused",provider="none"}',
      ),
      2,
    );

    // Other countries enrol, and the Nigerian user's login code still goes out.
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextPhone()), 200);
    service.clock.advance(31);
    assert.deepEqual(await expectStatus(service.login(loginUser, 'correct horse battery'), 200), MFA_REQUIRED);
    assert.equal(messagesTo(service, LOGIN_PHONE).length, 3, 'enrolment, first login, this login');

    // The hour ends, and so does the pause.
    service.clock.advance(retryAfter);
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextNigerian()), 200);
    assert.equal(await metricValue(service, 'mfa_sms_country_paused{country="NG"}'), 0);
  });

  test('of 5 simultaneous requests past the threshold, all answer 429 and the pause is recorded once', async () => {
    startOfNextHour(service);
    await reachFloor();
    const users = await Promise.all(Array.from({ length: 5 }, () => freshUser(service)));
    const asked = service.twilio.requestCount;
    const answers = await Promise.all(users.map((user) => requestCode(service, user.token, nextNigerian())));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [429, 429, 429, 429, 429],
    );
    assert.equal(service.twilio.requestCount, asked);
    const pauses = (await Promise.all(users.map((user) => eventsOf(service, user.userId))))
      .flat()
      .filter((event) => event.type === 'sms_country_paused');
    assert.equal(pauses.length, 1);
  });

  test('of 20 simultaneous enrolments in a fresh hour, exactly the floor are sent; the rest and later ones answer 429 sms_country_paused', async () => {
    startOfNextHour(service);
    const users = await Promise.all(Array.from({ length: 20 }, () => freshUser(service)));
    const asked = service.twilio.requestCount;
    const answers = await Promise.all(users.map((user) => requestCode(service, user.token, nextNigerian())));
    const statuses = answers.map((answer) => answer.status);
    assert.equal(statuses.filter((status) => status === 200).length, 3, `statuses: ${statuses}`);
    assert.equal(service.twilio.requestCount - asked, 3);
    for (const answer of answers) {
      const { error } = (await answer.json()) as { error?: string };
      if (answer.status !== 200) assert.equal(error, 'sms_country_paused');
    }
    await expectError(
      requestCode(service, (await freshUser(service)).token, nextNigerian()),
      429,
      'sms_country_paused',
    );
    const pauses = (await Promise.all(users.map((user) => eventsOf(service, user.userId))))
      .flat()
      .filter((event) => event.type === 'sms_country_paused');
    assert.equal(pauses.length, 1);
    assert.equal(pauses[0]?.detail.sends_this_hour, '3');
  });

  test('sms-status shows the budgets and the pause; sms-resume ends it for the rest of the hour', async () => {
    startOfNextHour(service);
    await reachFloor();
    await expectError(
      requestCode(service, (await freshUser(service)).token, nextNigerian()),
      429,
      'sms_country_paused',
    );

    const status = await admin(service, ['sms-status'], env);
    assert.equal(status.code, 0, status.stderr);
    const [header = '', ...lines] = status.stdout.split('\n');
    // Aligned columns for people, two spaces or more apart.
    const columns = header.split(/ {2,}/);
    assert.deepEqual(columns, [
      'country',
      'sent this hour',
      'hourly budget',
      'hourly average, 7 days',
      'pauses above',
      'state',
    ]);
    const nigeria = lines.find((line) => line.startsWith('NG '))?.split(/ {2,}/);
    assert.ok(nigeria, status.stdout);
    assert.equal(lines[0]?.indexOf('paused until'), header.indexOf('state'), `aligned:\n${status.stdout}`);
    assert.equal(nigeria[2], '100', 'the default country budget');
    assert.equal(nigeria[4], '3', 'the floor');
    assert.match(nigeria[5] ?? '', /^paused until \S+ \(sms-resume NG\)$/);
    assert.match(status.stdout, /budget per number range \(all digits but the last 2\): 5 an hour/);

    const resumed = await admin(service, ['sms-resume', 'ng'], env);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /NG resumed/);
    const { token } = await freshUser(service);
    const PHONE = nextNigerian();
    await expectStatus(requestCode(service, token, PHONE), 200);
    await expectStatus(verifyCode(service, token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    // The resume holds for the rest of the hour: the threshold is not judged again.
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextNigerian()), 200);
    assert.equal(await metricValue(service, 'mfa_sms_country_paused{country="NG"}'), 0);

    const again = await admin(service, ['sms-resume', 'NG'], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not paused/);
    const afterResume = await admin(service, ['sms-status'], env);
    assert.match(afterResume.stdout, /^NG {2}.* {2}resumed at /m);
  });
});

describe('the anomaly pause follows the 7-day hourly average (SMS_ANOMALY_MULTIPLE=336, SMS_ANOMALY_FLOOR=1)', () => {
  let service: Service;
  before(async () => {
    // 336 = 2 × 168: the threshold is twice the sends of the 7 days before, so each test hour doubles it.
    service = await startService({ env: { SMS_ANOMALY_MULTIPLE: '336', SMS_ANOMALY_FLOOR: '1' } });
  });
  after(() => service.close());

  async function sendsAllowed(upTo: number): Promise<number> {
    for (let sent = 0; sent < upTo; sent++) {
      const answer = await requestCode(service, (await freshUser(service)).token, nextNigerian());
      if (answer.status === 429) {
        assert.equal(((await answer.json()) as { error: string }).error, 'sms_country_paused');
        return sent;
      }
      assert.equal(answer.status, 200, await answer.text());
    }
    return upTo;
  }

  test('the threshold is the larger of the floor and the multiple of the average, and the history ends after 7 days', async () => {
    startOfNextHour(service);
    assert.equal(await sendsAllowed(5), 1, 'no history: the floor');
    startOfNextHour(service);
    assert.equal(await sendsAllowed(5), 2, 'one send in the 7 days before: 336 × 1/168');
    startOfNextHour(service);
    assert.equal(await sendsAllowed(10), 6, 'three sends in the 7 days before');
    service.clock.advance(7 * 24 * 3600);
    startOfNextHour(service);
    assert.equal(await sendsAllowed(5), 1, 'older than 7 days no longer counts');
  });
});
