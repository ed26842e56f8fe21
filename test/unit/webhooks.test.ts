import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { nextAttemptAt } from '../../src/outbox/retry.js';
import { addressRefusal } from '../../src/webhooks/destination-guard.js';
import { WEBHOOK_EVENT_TYPES, webhookEventFor, webhookPayload } from '../../src/webhooks/outbox.js';
import { createWebhookSecret, signWebhook } from '../../src/webhooks/signature.js';

describe('which audit events are webhook events', () => {
  test('each webhook event type comes from its audit event', () => {
    const mapping: [string, string, string][] = [
      ['mfa_enabled', 'succeeded', 'mfa.enabled'],
      ['mfa_disabled', 'succeeded', 'mfa.disabled'],
      ['mfa_disabled', 'recovered', 'mfa.disabled'],
      ['mfa_disabled', 'reset_by_operator', 'mfa.reset_by_operator'],
      ['factor_added', 'succeeded', 'mfa.factor_added'],
      ['factor_removed', 'succeeded', 'mfa.factor_removed'],
      ['backup_codes_regenerated', 'succeeded', 'mfa.backup_codes_regenerated'],
      ['backup_code_used', 'succeeded', 'mfa.backup_code_used'],
      ['login', 'throttled', 'login.throttled'],
      ['mfa_throttled', 'refused', 'mfa.throttled'],
      ['refresh_token_reuse', 'login_revoked', 'refresh_token.reused'],
      // The person's own change and an operator's (CONTRACT §20).
      ['password_changed', 'succeeded', 'password.changed'],
      ['password_changed', 'set_by_operator', 'password.changed'],
      ['email_verified', 'succeeded', 'email.verified'],
      // Recorded by the SMS fraud defence (issue 15), whatever its outcome.
      ['sms_country_paused', 'paused', 'sms.country_paused'],
      ['sms_country_paused', 'succeeded', 'sms.country_paused'],
      // A change an operator made through the admin API (issue 30).
      ['operator_action', 'succeeded', 'operator.action'],
      // Recovery when every factor is lost (issue 29), cancelled by the user or by a sign-in.
      ['recovery_started', 'succeeded', 'mfa.recovery_started'],
      ['recovery_cancelled', 'by_user', 'mfa.recovery_cancelled'],
      ['recovery_cancelled', 'by_sign_in', 'mfa.recovery_cancelled'],
      ['recovery_completed', 'succeeded', 'mfa.recovery_completed'],
    ];
    for (const [type, outcome, event] of mapping)
      assert.equal(webhookEventFor(type, outcome), event, `${type}:${outcome}`);
    assert.deepEqual(
      [...new Set(mapping.map(([, , event]) => event))].sort(),
      [...WEBHOOK_EVENT_TYPES].sort(),
      'every event type has a source',
    );
  });

  test('attempts that changed nothing are not events', () => {
    for (const [type, outcome] of [
      ['login', 'succeeded'],
      ['login', 'failed'],
      ['login', 'mfa_required'],
      ['mfa_code_check', 'wrong'],
      ['backup_code_used', 'wrong'],
      ['factor_made_default', 'succeeded'],
      ['user_deleted', 'succeeded'],
    ]) {
      assert.equal(webhookEventFor(type ?? '', outcome ?? ''), undefined, `${type}:${outcome}`);
    }
  });

  test('the payload passes on the user, the address, the factor and the pause, and no other fact', () => {
    const body = webhookPayload({
      type: 'sms.country_paused',
      occurredAt: new Date('2026-11-23T12:00:00.000Z'),
      clientAddress: '203.0.113.9',
      userId: 'user-1',
      detail: {
        country: 'GB',
        paused_until: '2026-11-23T13:00:00.000Z',
        sends_this_hour: '120',
        phone_number: '447700900123',
        mfa_code: '123456',
      },
    });
    assert.deepEqual(JSON.parse(body), {
      type: 'sms.country_paused',
      timestamp: '2026-11-23T12:00:00.000Z',
      data: {
        user_id: 'user-1',
        client_address: '203.0.113.9',
        country: 'GB',
        paused_until: '2026-11-23T13:00:00.000Z',
      },
    });
  });
});

describe('Standard Webhooks signatures', () => {
  test('a signature made with a new secret verifies with the standardwebhooks package', () => {
    const secret = createWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"type":"mfa.enabled","timestamp":"2026-11-23T12:00:00.000Z","data":{}}';
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, 'msg_1', timestamp, body),
    };
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.equal(headers['webhook-signature'], new Webhook(secret).sign('msg_1', new Date(timestamp * 1000), body));
    assert.throws(() => new Webhook(createWebhookSecret()).verify(body, headers));
  });
});

describe('retry schedule', () => {
  const created = new Date('2026-11-23T12:00:00.000Z');
  const after = (seconds: number) => new Date(created.getTime() + seconds * 1000);
  const waitSeconds = (attempt: number, now: Date, random: number) =>
    ((nextAttemptAt(created, attempt, now, () => random)?.getTime() ?? Number.NaN) - now.getTime()) / 1000;

  test('the first retry comes within 10 s, and the waits grow, jittered, to an hour', () => {
    for (const random of [0, 0.5, 0.999]) {
      assert.ok(waitSeconds(1, created, random) <= 10 && waitSeconds(1, created, random) >= 2.5);
    }
    assert.equal(waitSeconds(2, created, 0), 5);
    assert.equal(waitSeconds(3, created, 0), 10);
    assert.equal(waitSeconds(10, after(3600), 1), 2560);
    assert.equal(waitSeconds(20, after(7200), 1), 3600, 'at most an hour');
    assert.notEqual(waitSeconds(5, created, 0.1), waitSeconds(5, created, 0.9), 'jittered');
  });

  test('retries go on for 24 hours from the event, then stop', () => {
    assert.equal(nextAttemptAt(created, 30, after(86_000), () => 1)?.toISOString(), after(86_400).toISOString());
    assert.equal(
      nextAttemptAt(created, 31, after(86_400), () => 1),
      undefined,
    );
  });
});

describe('webhook destinations', () => {
  test('loopback, private, link-local and reserved addresses are named; public ones pass', () => {
    const cases: [string, string | undefined][] = [
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.0.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd12:3456::1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['0.0.0.0', 'reserved'],
      ['224.0.0.1', 'reserved'],
      ['::', 'reserved'],
      ['93.184.216.34', undefined],
      ['172.32.0.1', undefined],
      ['2606:2800:220:1::1', undefined],
    ];
    for (const [address, kind] of cases) assert.equal(addressRefusal(address), kind, address);
  });

  test('IPv6 addresses carrying an IPv4 address meet the IPv4 rules; local-use NAT64 is private', () => {
    const cases: [string, string | undefined][] = [
      ['64:ff9b::a00:1', 'private'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['64:ff9b::a9fe:a9fe', 'link-local'],
      ['64:ff9b::7f00:1', 'loopback'],
      ['64:ff9b::5db8:d822', undefined],
      ['64:ff9b:1::5db8:d822', 'private'],
      ['::ffff:0:a00:1', 'private'],
      ['::ffff:0:5db8:d822', undefined],
      ['2002:a00:1::1', 'private'],
      ['2002:7f00:1:ffff::', 'loopback'],
      ['2002:5db8:d822::1', undefined],
    ];
    for (const [address, kind] of cases) assert.equal(addressRefusal(address), kind, address);
  });
});
