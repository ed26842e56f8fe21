import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { hashPassword } from '../../src/crypto/passwords.js';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';
const ON_PHONE = nextPhone();
const PENDING_PHONE = nextPhone();

let service: Service;
before(async () => {
  const passwordHash = await hashPassword(PASSWORD);
  // A database as the release before the factor model left it: one `mfa` row per user.
  service = await startService({
    legacy: {
      version: '2026_11_23_2100_hardening',
      async seed(db) {
        const user = (name: string) => ({
          id: `id-${name}`,
          username: name,
          username_key: name,
          password_hash: passwordHash,
          created_at: '2026-01-01T00:00:00.000Z',
        });
        await db
          .insertInto('user')
          .values([user('sms-on'), user('sms-pending')])
          .execute();
        await db
          .insertInto('mfa')
          .values([
            { user_id: 'id-sms-on', enabled: 1, phone_number: ON_PHONE, enabled_at: '2026-05-01T00:00:00.000Z' },
            { user_id: 'id-sms-pending', enabled: 0, phone_number: PENDING_PHONE, enabled_at: null },
          ])
          .execute();
      },
    },
  });
});
after(() => service.close());

describe('upgrading a database made before the factor model', () => {
  test('an SMS user of the old schema logs in with an SMS code as before, and sees the same status', async () => {
    assert.deepEqual(await expectStatus(service.login('sms-on', PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'sms',
    });
    const code = service.twilio.lastCodeFor(`+${ON_PHONE}`);
    const tokens = await expectStatus(service.login('sms-on', PASSWORD, { mfa_code: code }), 200);
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'sms']);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200), {
      enabled: true,
      challenge_type: 'sms',
      phone_number: ON_PHONE,
    });
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token: tokens.access_token }), 200);
    assert.deepEqual(
      factors.map((factor: { type: string; is_default: boolean; phone_number: string }) => [
        factor.type,
        factor.is_default,
        factor.phone_number,
      ]),
      [['sms', true, ON_PHONE]],
    );
    // The login counts as made under the current enrolment: sensitive calls work.
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: tokens.access_token }), 200);
  });

  test('a pending enrolment of the old schema is still pending, and can be finished', async () => {
    const token = await service.accessToken('sms-pending', PASSWORD);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token }), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: PENDING_PHONE,
    });
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: PENDING_PHONE } }),
      200,
    );
    const code = service.twilio.lastCodeFor(`+${PENDING_PHONE}`);
    assert.deepEqual(
      await expectStatus(service.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } }), 200),
      { enabled: true, challenge_type: 'sms', phone_number: PENDING_PHONE },
    );
  });
});
