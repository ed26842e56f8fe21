import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Config } from '../../src/config.js';
import { type FakeTwilio, startFakeTwilio } from '../support/fake-twilio.js';
import { type FakeVonage, startFakeVonage } from '../support/fake-vonage.js';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { expectError, freshUser, messagesTo, metricValue, requestCode, verifyCode } from '../support/sms-calls.js';

// CONTRACT §15 failover: SMS_FALLBACK_PROVIDER, against local fakes of Twilio and of Vonage's SMS API.

const PASSWORD = 'correct horse battery';
const VONAGE = { apiKey: 'vonage-key-0001', apiSecret: 'vonage-secret-for-tests' };
const NO_MFA = { enabled: false, challenge_type: '', phone_number: '' };
const MFA_REQUIRED = { mfa_required: true, mfa_type: 'sms' };

/**
 * A 2 s primary deadline instead of ten, so that "Twilio hangs" costs two seconds of real time;
 * the fallback never hangs here, and keeps 5 s so that a busy machine cannot make it time out.
 */
function shortTimeouts(config: Config): Config {
  return {
    ...config,
    sms: config.sms.kind === 'twilio' ? { ...config.sms, timeoutMs: 2000 } : config.sms,
    smsFallback: config.smsFallback && { ...config.smsFallback, timeoutMs: 5000 },
  };
}

function vonageEnv(vonage: FakeVonage) {
  return {
    SMS_FALLBACK_PROVIDER: 'vonage',
    VONAGE_API_KEY: VONAGE.apiKey,
    VONAGE_API_SECRET: VONAGE.apiSecret,
    VONAGE_FROM: 'MFA',
    VONAGE_API_URL: vonage.url,
  };
}

/** `mfa_sms_sent_total` for one enrolment outcome of one provider (+1 numbers), 0 when absent. */
async function enrolSends(on: Service, outcome: string, provider: string): Promise<number> {
  const series = `mfa_sms_sent_total{purpose="enrol",country_calling_code="1",outcome="${outcome}",provider="${provider}"}`;
  return (await metricValue(on, series)) ?? 0;
}

/** Sets the primary (the service's fake Twilio) and Vonage failing in these ways for `work`, then heals both. */
async function whileFailing(
  on: Service,
  vonage: FakeVonage,
  twilio: 'fail' | 'hang',
  vonageBehaviour: 'deliver' | 'fail',
  work: () => Promise<void>,
) {
  on.twilio.behave(twilio);
  vonage.behave(vonageBehaviour);
  try {
    await work();
  } finally {
    on.twilio.behave('deliver');
    vonage.behave('deliver');
  }
}

describe('Vonage as the fallback (SMS_FALLBACK_PROVIDER=vonage)', () => {
  let vonage: FakeVonage;
  let service: Service;
  before(async () => {
    vonage = await startFakeVonage(VONAGE);
    service = await startService({ env: vonageEnv(vonage), adjust: shortTimeouts });
  });
  after(async () => {
    await service.close();
    await vonage.close();
  });

  /**
   * Ends each test with a send the primary delivers: that ends the run of primary failures, so
   * that no test here opens the 60 s "fallback first" window (tested below, on a service of its own).
   */
  async function expectPrimaryDelivers() {
    const PHONE = nextPhone();
    await expectStatus(requestCode(service, (await freshUser(service)).token, PHONE), 200);
    assert.equal(messagesTo(service, PHONE).length, 1, 'the primary sent it');
    assert.ok(!vonage.messages.some((message) => message.to === PHONE), 'Vonage was not asked');
  }

  test('when Twilio answers 500, the enrolment goes through Vonage’s SMS API (api_key, api_secret, from, to without +, text) and its code enrols', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    const failedBefore = await enrolSends(service, 'failed', 'twilio');
    const sentBefore = await enrolSends(service, 'sent', 'vonage');
    await whileFailing(service, vonage, 'fail', 'deliver', async () => {
      await expectStatus(requestCode(service, token, PHONE), 200);
    });
    const message = vonage.messages.at(-1);
    assert.ok(message);
    assert.deepEqual(
      { ...message, text: message.text.replace(/\d{6}/, 'CODE') },
      {
        apiKey: VONAGE.apiKey,
        apiSecret: VONAGE.apiSecret,
        from: 'MFA',
        to: PHONE,
        text: 'Your MFA verification code is CODE. It expires in 5 minutes.',
        contentType: 'application/x-www-form-urlencoded',
      },
    );
    assert.equal(messagesTo(service, PHONE).length, 0, 'Twilio delivered nothing');
    const enabled = await expectStatus(verifyCode(service, token, vonage.lastCodeFor(PHONE)), 200);
    assert.equal(enabled.phone_number, PHONE);
    assert.equal(await enrolSends(service, 'failed', 'twilio'), failedBefore + 1);
    assert.equal(await enrolSends(service, 'sent', 'vonage'), sentBefore + 1);
    assert.ok(!service.log().includes(PHONE), 'the full number is not logged');
    assert.ok(!service.log().includes(VONAGE.apiSecret), 'the Vonage secret is not logged');
    await expectPrimaryDelivers();
  });

  test('a number Twilio refuses is not sent through Vonage: 400 phone_number_rejected', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    service.twilio.refuse(`+${PHONE}`, 21614);
    const asked = vonage.requestCount;
    await expectError(requestCode(service, token, PHONE), 400, 'phone_number_rejected');
    assert.equal(vonage.requestCount, asked, 'Vonage was not asked');
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), NO_MFA);
    await expectPrimaryDelivers();
  });

  test('when Twilio does not answer in time, the same code goes through Vonage: 200, and that code enrols', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    await whileFailing(service, vonage, 'hang', 'deliver', async () => {
      await expectStatus(requestCode(service, token, PHONE), 200);
    });
    // Twilio took the message without answering: it may arrive too, with the same code.
    const viaTwilio = service.twilio.lastCodeFor(`+${PHONE}`);
    const viaVonage = vonage.lastCodeFor(PHONE);
    assert.equal(viaVonage, viaTwilio);
    await expectStatus(verifyCode(service, token, viaVonage), 200);
    assert.equal(await enrolSends(service, 'timeout', 'twilio'), 1);
    await expectPrimaryDelivers();
  });

  test('Twilio fails and Vonage refuses the number (status 7, barred): 400 phone_number_rejected; nothing kept, the cooldown unspent', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    vonage.refuse(PHONE, '7');
    await whileFailing(service, vonage, 'fail', 'deliver', async () => {
      const { body } = await expectError(requestCode(service, token, PHONE), 400, 'phone_number_rejected');
      assert.match(body.error_description, /Vonage status 7/);
    });
    await expectError(verifyCode(service, token, '123456'), 400, 'invalid_mfa_code');
    await expectStatus(requestCode(service, token, nextPhone()), 200);
  });

  test('both fail (Twilio 500, Vonage status 5): 502 sms_unavailable; nothing kept, the cooldown unspent', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    const asked = vonage.requestCount;
    await whileFailing(service, vonage, 'fail', 'fail', async () => {
      await expectError(requestCode(service, token, PHONE), 502, 'sms_unavailable');
    });
    assert.equal(vonage.requestCount, asked + 1, 'Vonage was asked');
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), NO_MFA);
    await expectStatus(requestCode(service, token, PHONE), 200);
    assert.equal(messagesTo(service, PHONE).length, 1);
  });

  test('Twilio silent and Vonage failing: 504 sms_timeout, since Twilio may still deliver: the cooldown is spent and its code enrols', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    await whileFailing(service, vonage, 'hang', 'fail', async () => {
      await expectError(requestCode(service, token, PHONE), 504, 'sms_timeout');
    });
    await expectError(requestCode(service, token, PHONE), 429, 'sms_cooldown');
    await expectStatus(verifyCode(service, token, service.twilio.lastCodeFor(`+${PHONE}`)), 200);
    await expectPrimaryDelivers();
  });

  test('a login code fails over too', async () => {
    const PHONE = nextPhone();
    const username = `failover-login-${process.pid}`;
    await service.createUserWithMfa(username, PASSWORD, PHONE);
    await whileFailing(service, vonage, 'fail', 'deliver', async () => {
      assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), MFA_REQUIRED);
    });
    await expectStatus(service.login(username, PASSWORD, { mfa_code: vonage.lastCodeFor(PHONE) }), 200);
    await expectPrimaryDelivers();
  });
});

describe('after 5 primary failures in a row, the fallback goes first for 60 s', () => {
  let vonage: FakeVonage;
  let service: Service;
  before(async () => {
    vonage = await startFakeVonage(VONAGE);
    service = await startService({ env: vonageEnv(vonage) });
  });
  after(async () => {
    await service.close();
    await vonage.close();
  });

  /** Enrols a fresh user and answers which providers were asked. */
  async function enrol() {
    const twilioAsked = service.twilio.requestCount;
    const vonageAsked = vonage.requestCount;
    await expectStatus(requestCode(service, (await freshUser(service)).token, nextPhone()), 200);
    return { twilio: service.twilio.requestCount - twilioAsked, vonage: vonage.requestCount - vonageAsked };
  }

  test('5 failures switch the order; 60 s later Twilio goes first again', async () => {
    service.twilio.behave('fail');
    try {
      for (let failure = 0; failure < 5; failure++) assert.deepEqual(await enrol(), { twilio: 1, vonage: 1 });
    } finally {
      service.twilio.behave('deliver');
    }
    assert.match(service.log(), /the fallback goes first for 60 s/);
    // Twilio works again, but is not asked for a minute.
    assert.deepEqual(await enrol(), { twilio: 0, vonage: 1 });
    service.clock.advance(59);
    assert.deepEqual(await enrol(), { twilio: 0, vonage: 1 });
    service.clock.advance(2);
    assert.deepEqual(await enrol(), { twilio: 1, vonage: 0 });
  });

  test('while Vonage goes first and fails, Twilio still gets the message; the 60 s run their course', async () => {
    service.twilio.behave('fail');
    try {
      for (let failure = 0; failure < 5; failure++) await enrol();
    } finally {
      service.twilio.behave('deliver');
    }
    vonage.behave('fail');
    try {
      assert.deepEqual(await enrol(), { twilio: 1, vonage: 1 });
    } finally {
      vonage.behave('deliver');
    }
    assert.deepEqual(await enrol(), { twilio: 0, vonage: 1 });
    service.clock.advance(61);
    assert.deepEqual(await enrol(), { twilio: 1, vonage: 0 });
  });
});

describe('a second Twilio account as the fallback (SMS_FALLBACK_PROVIDER=twilio)', () => {
  const SECOND_SID = 'AC00000000000000000000000000000002';
  const SECOND_TOKEN = 'second-twilio-auth-token';
  let second: FakeTwilio;
  let service: Service;
  before(async () => {
    second = await startFakeTwilio();
    service = await startService({
      env: {
        // Nothing listens on port 1: every primary send meets a refused connection.
        TWILIO_API_URL: 'http://127.0.0.1:1',
        SMS_FALLBACK_PROVIDER: 'twilio',
        TWILIO_FALLBACK_ACCOUNT_SID: SECOND_SID,
        TWILIO_FALLBACK_AUTH_TOKEN: SECOND_TOKEN,
        TWILIO_FALLBACK_FROM: '+15005550007',
        TWILIO_FALLBACK_API_URL: second.url,
      },
    });
  });
  after(async () => {
    await service.close();
    await second.close();
  });

  test('with the primary unreachable, the code goes through the second account, named twilio_fallback in the metrics', async () => {
    const PHONE = nextPhone();
    const { token } = await freshUser(service);
    await expectStatus(requestCode(service, token, PHONE), 200);
    const message = second.messages.at(-1);
    assert.ok(message);
    assert.equal(message.accountSid, SECOND_SID);
    assert.equal(message.authorization, `Basic ${Buffer.from(`${SECOND_SID}:${SECOND_TOKEN}`).toString('base64')}`);
    assert.equal(message.from, '+15005550007');
    assert.equal(message.to, `+${PHONE}`);
    await expectStatus(verifyCode(service, token, second.lastCodeFor(`+${PHONE}`)), 200);
    assert.equal(await enrolSends(service, 'failed', 'twilio'), 1);
    assert.equal(await enrolSends(service, 'sent', 'twilio_fallback'), 1);
    const duration = await metricValue(service, 'mfa_sms_send_duration_seconds_count{provider="twilio_fallback"}');
    assert.equal(duration, 1);
  });
});
