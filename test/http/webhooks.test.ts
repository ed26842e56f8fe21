import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import * as OTPAuth from 'otpauth';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import {
  eventually,
  type ReceivedWebhook,
  startWebhookReceiver,
  verifyWebhook,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

// CONTRACT §16 over HTTP: a local receiver, reached because WEBHOOK_ALLOW_PRIVATE=true.
const PASSWORD = 'correct horse battery';

let service: Service;
let receiver: WebhookReceiver;
before(async () => {
  service = await startService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startWebhookReceiver();
});
after(async () => {
  await service.close();
  await receiver.close();
});

let pathCount = 0;
let userCount = 0;

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  secret: string;
  created_at: string;
  path: string;
}

/** POST /admin/webhooks to a path of its own on the receiver. */
async function subscribe(events?: string[]): Promise<Endpoint> {
  const path = `/hooks/${++pathCount}`;
  const body = events ? { url: receiver.url + path, events } : { url: receiver.url + path };
  const created = await expectStatus(
    service.call('/admin/webhooks', { method: 'POST', token: ADMIN_TOKEN, body }),
    201,
  );
  return { ...created, path };
}

async function unsubscribe(endpoint: Endpoint) {
  await expectStatus(service.call(`/admin/webhooks/${endpoint.id}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
}

async function deliveries(endpoint: Endpoint): Promise<any[]> {
  return (await expectStatus(service.call(`/admin/webhooks/${endpoint.id}/deliveries`, { token: ADMIN_TOKEN }), 200))
    .deliveries;
}

/** Waits until the endpoint's log shows `count` attempts made, none in flight; returns those attempts. */
async function attemptsFinished(endpoint: Endpoint, count: number): Promise<any[]> {
  let seen: any[] = [];
  await eventually(async () => {
    seen = await deliveries(endpoint);
    const finished = seen.filter((delivery) => delivery.status !== 'pending' || delivery.attempted_at === null);
    return seen.filter((delivery) => delivery.attempted_at !== null).length >= count && finished.length === seen.length;
  });
  return seen.filter((delivery) => delivery.attempted_at !== null);
}

/** A user with an SMS factor (mfa.enabled) and a token whose login carried it. */
function mfaUser(phone = nextPhone()) {
  return service.createUserWithMfa(`hooked-${++userCount}`, PASSWORD, phone);
}

describe('webhook endpoints (admin API)', () => {
  test('an endpoint is created with a whsec_ secret shown once, listed without it, and deleted', async () => {
    const endpoint = await subscribe(['mfa.enabled', 'mfa.disabled']);
    assert.deepEqual(Object.keys(endpoint).sort(), ['created_at', 'events', 'id', 'path', 'secret', 'url']);
    assert.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(endpoint.events, ['mfa.enabled', 'mfa.disabled']);
    const listed = await expectStatus(service.call('/admin/webhooks', { token: ADMIN_TOKEN }), 200);
    const mine = listed.webhooks.find((webhook: { id: string }) => webhook.id === endpoint.id);
    assert.deepEqual(mine, {
      id: endpoint.id,
      url: endpoint.url,
      events: endpoint.events,
      created_at: endpoint.created_at,
    });

    const stored = await service.dumpDatabase();
    assert.ok(!stored.includes(endpoint.secret.slice('whsec_'.length)), 'the secret is stored sealed');
    assert.ok(!service.log().includes(endpoint.secret.slice('whsec_'.length)), 'and never logged');

    await unsubscribe(endpoint);
    assert.equal(
      (
        await expectStatus(
          service.call(`/admin/webhooks/${endpoint.id}`, { method: 'DELETE', token: ADMIN_TOKEN }),
          404,
        )
      ).error,
      'not_found',
    );
    await expectStatus(service.call(`/admin/webhooks/${endpoint.id}/deliveries`, { token: ADMIN_TOKEN }), 404);
  });

  test('without events an endpoint receives every event type', async () => {
    const endpoint = await subscribe();
    assert.equal(endpoint.events.length, 17);
    assert.ok(endpoint.events.includes('sms.country_paused'));
    assert.ok(endpoint.events.includes('operator.action'));
    await unsubscribe(endpoint);
  });

  test('bad input is a 400 that says what to send, and creates nothing', async () => {
    const before = (await expectStatus(service.call('/admin/webhooks', { token: ADMIN_TOKEN }), 200)).webhooks.length;
    const cases: [unknown, RegExp][] = [
      [{}, /url/],
      [{ url: 42 }, /url/],
      [{ url: 'not a url' }, /url: expected an absolute https URL/],
      [{ url: `${receiver.url}/x`, events: ['mfa.everything'] }, /events\.0: expected one of mfa\.enabled/],
      [{ url: `${receiver.url}/x`, events: [] }, /events/],
      [{ url: `${receiver.url}/x`, event: ['mfa.enabled'] }, /^event: unknown field; the fields are url, events$/],
      [{ url: 'ftp://files.example.com/' }, /expected an https URL/],
      [{ url: 'http://user:pass@127.0.0.1/' }, /credentials/],
    ];
    for (const [body, description] of cases) {
      const answer = await expectStatus(
        service.call('/admin/webhooks', { method: 'POST', token: ADMIN_TOKEN, body }),
        400,
      );
      assert.match(answer.error_description, description, JSON.stringify(body));
    }
    await expectStatus(service.call('/admin/webhooks', { method: 'POST', body: { url: `${receiver.url}/x` } }), 401);
    await expectStatus(service.call('/admin/webhooks'), 401);
    const after = (await expectStatus(service.call('/admin/webhooks', { token: ADMIN_TOKEN }), 200)).webhooks.length;
    assert.equal(after, before);
  });
});

describe('deliveries (Standard Webhooks)', () => {
  test('mfa.enabled reaches the receiver within seconds, signed so that standardwebhooks verifies it', async () => {
    const endpoint = await subscribe(['mfa.enabled']);
    const phone = nextPhone();
    const { userId } = await mfaUser(phone);
    const [webhook] = await receiver.waitFor(endpoint.path, 1);
    assert.ok(webhook);
    assert.equal(webhook.headers['content-type'], 'application/json');
    assert.match(webhook.headers['webhook-id'] ?? '', /^msg_[0-9a-f]{32}$/);
    assert.match(webhook.headers['webhook-signature'] ?? '', /^v1,[A-Za-z0-9+/]+=*$/);
    const payload = verifyWebhook(endpoint.secret, webhook);
    assert.equal(payload.type, 'mfa.enabled');
    assert.ok(!Number.isNaN(Date.parse(payload.timestamp)));
    assert.deepEqual(Object.keys(payload.data).sort(), ['client_address', 'factor_id', 'factor_type', 'user_id']);
    assert.equal(payload.data.user_id, userId);
    assert.equal(payload.data.factor_type, 'sms');
    assert.equal(payload.data.client_address, '127.0.0.1');
    assert.ok(!webhook.body.includes(phone.slice(0, -4)), 'no phone number');
    // Signed with this endpoint's secret: another secret, or a changed body, does not verify.
    const other = await subscribe(['mfa.disabled']);
    assert.throws(() => verifyWebhook(other.secret, webhook));
    assert.throws(() => verifyWebhook(endpoint.secret, { ...webhook, body: webhook.body.replace(userId, 'someone') }));

    const [logged] = await attemptsFinished(endpoint, 1);
    assert.deepEqual(
      { ...logged, attempted_at: typeof logged.attempted_at },
      {
        event_id: webhook.headers['webhook-id'],
        type: 'mfa.enabled',
        attempt: 1,
        status: 'succeeded',
        response_status: 204,
        attempted_at: 'string',
      },
    );
    await unsubscribe(endpoint);
    await unsubscribe(other);
  });

  test('a receiver that fails twice then succeeds gets the same webhook-id three times, retried within 10 s', async () => {
    const endpoint = await subscribe(['mfa.enabled']);
    receiver.answerWith((webhook, count) => (webhook.path === endpoint.path && count <= 2 ? 500 : 204));
    try {
      await mfaUser();
      await receiver.waitFor(endpoint.path, 1);
      await attemptsFinished(endpoint, 1);
      const metrics = await (await service.call('/metrics')).text();
      assert.match(metrics, /^mfa_webhook_deliveries_total\{outcome="failed"\} [1-9]/m);
      assert.match(metrics, /^mfa_webhook_outbox_depth [1-9]/m);
      assert.match(metrics, /^mfa_webhook_oldest_undelivered_seconds /m);
      await expectStatus(service.call('/readyz'), 200);
      // The first retry is due within 10 s, the second within 10 s of it (5 s doubling, jittered down).
      service.clock.advance(10);
      await receiver.waitFor(endpoint.path, 2);
      await attemptsFinished(endpoint, 2);
      service.clock.advance(10);
      const webhooks = await receiver.waitFor(endpoint.path, 3);

      const ids = webhooks.map((webhook) => webhook.headers['webhook-id']);
      assert.equal(new Set(ids).size, 1, `one webhook-id: ${ids}`);
      assert.equal(new Set(webhooks.map((webhook) => webhook.body)).size, 1, 'the same body every time');
      for (const webhook of webhooks) assert.equal(verifyWebhook(endpoint.secret, webhook).type, 'mfa.enabled');
      const log = await attemptsFinished(endpoint, 3);
      assert.deepEqual(
        log.map((line) => [line.event_id, line.attempt, line.status, line.response_status]),
        [
          [ids[0], 3, 'succeeded', 204],
          [ids[0], 2, 'failed', 500],
          [ids[0], 1, 'failed', 500],
        ],
        'newest first',
      );
      assert.match(await (await service.call('/metrics')).text(), /^mfa_webhook_outbox_depth 0$/m);
    } finally {
      receiver.answerWith(() => 204);
      await unsubscribe(endpoint);
    }
  });

  test('a receiver that does not answer within 10 s, or refuses the connection, is tried again', {
    timeout: 120_000,
  }, async () => {
    const endpoint = await subscribe(['mfa.enabled']);
    receiver.answerWith((webhook, count) => (webhook.path === endpoint.path && count === 1 ? 'hang' : 204));
    try {
      await mfaUser();
      await receiver.waitFor(endpoint.path, 1);
      const [timedOut] = await attemptsFinished(endpoint, 1);
      assert.deepEqual([timedOut.attempt, timedOut.status, timedOut.response_status], [1, 'failed', null]);
      service.clock.advance(10);
      const webhooks = await receiver.waitFor(endpoint.path, 2);
      assert.equal(webhooks[0]?.headers['webhook-id'], webhooks[1]?.headers['webhook-id']);
    } finally {
      receiver.answerWith(() => 204);
      await unsubscribe(endpoint);
    }

    // Nothing listens on this port: the connection is refused.
    const closed = await startWebhookReceiver();
    const port = new URL(closed.url).port;
    await closed.close();
    const created = await expectStatus(
      service.call('/admin/webhooks', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { url: `http://127.0.0.1:${port}/down`, events: ['mfa.enabled'] },
      }),
      201,
    );
    const down = { ...created, path: '/down' };
    try {
      await mfaUser();
      const [refused] = await attemptsFinished(down, 1);
      assert.deepEqual([refused.attempt, refused.status, refused.response_status], [1, 'failed', null]);
      const waiting = (await deliveries(down)).filter((line) => line.attempted_at === null);
      assert.deepEqual(
        waiting.map((line) => [line.event_id, line.attempt, line.status]),
        [[refused.event_id, 2, 'pending']],
        'the next attempt is listed as pending',
      );
    } finally {
      await unsubscribe(down);
    }
  });

  test('every event type the service produces is sent by its real flow, with the facts and no secret', async () => {
    const endpoint = await subscribe();
    const phone = nextPhone();
    const { userId, username, token } = await mfaUser(phone);

    // A second factor added, then removed.
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri);
    const totpCode = app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: totpCode } }), 200);
    await expectStatus(service.call(`/mfa/factors/${start.factor_id}/`, { method: 'DELETE', token }), 204);

    // Backup codes made, one used; a refresh token replayed.
    const { backup_codes: backup } = await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token }), 200);
    const tokens = await expectStatus(service.login(username, PASSWORD, { backup_code: backup[0] }), 200);
    const refresh = () =>
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      });
    await expectStatus(refresh(), 200);
    await expectStatus(refresh(), 400);
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);

    // Another user: second-factor guesses throttled, then the operator's reset.
    const guessed = await mfaUser();
    await expectStatus(service.login(guessed.username, PASSWORD), 200);
    const untilThrottled = async (attempt: () => Promise<Response>) => {
      for (let guess = 0; guess < 10; guess++) if ((await attempt()).status === 429) return;
      assert.fail('never throttled');
    };
    await untilThrottled(() => service.login(guessed.username, PASSWORD, { mfa_code: '000000' }));
    await expectStatus(
      service.call(`/admin/users/${guessed.userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }),
      204,
    );
    // Passwords throttled for a third username.
    const throttled = `throttled-${++userCount}`;
    const throttledId = await service.createUser(throttled, PASSWORD);
    await untilThrottled(() => service.login(throttled, 'not the password'));

    const expected = [
      'mfa.enabled',
      'mfa.factor_added',
      'mfa.factor_removed',
      'mfa.backup_codes_regenerated',
      'mfa.backup_code_used',
      'refresh_token.reused',
      'mfa.disabled',
      'mfa.throttled',
      'mfa.reset_by_operator',
      'login.throttled',
    ];
    let payloads: any[] = [];
    await eventually(() => {
      payloads = receiver.at(endpoint.path).map((webhook) => verifyWebhook(endpoint.secret, webhook));
      return expected.every((type) => payloads.some((payload) => payload.type === type));
    });
    /** The data of the one `type` event about `user` (or about no user). */
    const dataOf = (type: string, user: string | null) => {
      const found = payloads.filter((payload) => payload.type === type && payload.data.user_id === user);
      assert.equal(found.length, 1, `${type} for ${user}: ${JSON.stringify(payloads)}`);
      return found[0].data;
    };
    const request = { user_id: userId, client_address: '127.0.0.1' };
    assert.equal(dataOf('mfa.enabled', userId).factor_type, 'sms');
    const totp = { ...request, factor_type: 'totp', factor_id: start.factor_id };
    assert.deepEqual(dataOf('mfa.factor_added', userId), totp);
    assert.deepEqual(dataOf('mfa.factor_removed', userId), totp);
    for (const type of [
      'mfa.backup_codes_regenerated',
      'mfa.backup_code_used',
      'refresh_token.reused',
      'mfa.disabled',
    ]) {
      assert.deepEqual(dataOf(type, userId), request, type);
    }
    assert.deepEqual(dataOf('mfa.throttled', guessed.userId), { user_id: guessed.userId, client_address: '127.0.0.1' });
    assert.deepEqual(dataOf('mfa.reset_by_operator', guessed.userId), {
      user_id: guessed.userId,
      client_address: null,
    });
    // The account of the username throttled is named (its owner is told, CONTRACT §20).
    assert.deepEqual(dataOf('login.throttled', throttledId), { user_id: throttledId, client_address: '127.0.0.1' });

    const everything = receiver
      .at(endpoint.path)
      .map((webhook) => webhook.body)
      .join('\n');
    for (const secret of [PASSWORD, phone.slice(-10), totpCode, start.secret, ...backup, tokens.refresh_token, token]) {
      assert.ok(!everything.includes(secret), `a secret or number leaked: ${secret}`);
    }
    await unsubscribe(endpoint);
  });

  test('an event that cannot be put in the outbox undoes the change it reports', async () => {
    const endpoint = await subscribe(['mfa.disabled']);
    const { token } = await mfaUser();
    // The outbox made unwritable, as a failing database would.
    await service.execute(sql`alter table webhook_delivery rename to webhook_delivery_away`);
    try {
      await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 500);
    } finally {
      await service.execute(sql`alter table webhook_delivery_away rename to webhook_delivery`);
    }
    assert.equal((await expectStatus(service.call('/mfa/', { token }), 200)).enabled, true, 'MFA is still on');
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);
    const [webhook] = await receiver.waitFor(endpoint.path, 1);
    assert.equal(verifyWebhook(endpoint.secret, webhook as ReceivedWebhook).type, 'mfa.disabled');
    await unsubscribe(endpoint);
  });

  test('deleting an endpoint drops its pending deliveries', async () => {
    const endpoint = await subscribe(['mfa.enabled']);
    receiver.answerWith((webhook) => (webhook.path === endpoint.path ? 503 : 204));
    try {
      await mfaUser();
      await attemptsFinished(endpoint, 1);
      await unsubscribe(endpoint);
      service.clock.advance(3600);
      const metrics = await (await service.call('/metrics')).text();
      assert.match(metrics, /^mfa_webhook_outbox_depth 0$/m);
    } finally {
      receiver.answerWith(() => 204);
    }
  });

  // Last: it moves the clock a day on, past what a receiver's timestamp check tolerates.
  test('after 24 hours of failures a delivery is given up, and so reported', async () => {
    const endpoint = await subscribe(['mfa.enabled']);
    receiver.answerWith((webhook) => (webhook.path === endpoint.path ? 500 : 204));
    try {
      await mfaUser();
      let attempts = 0;
      for (let hours = 0; hours <= 24; hours += 6) {
        await attemptsFinished(endpoint, ++attempts);
        service.clock.advance(6 * 3600);
      }
      let log: any[] = [];
      await eventually(async () => {
        log = await deliveries(endpoint);
        return log.every((line) => line.status === 'failed');
      });
      assert.equal(new Set(log.map((line) => line.event_id)).size, 1);
      assert.ok(log.length >= 5, `${log.length} attempts`);
      const metrics = await (await service.call('/metrics')).text();
      assert.match(metrics, /^mfa_webhook_deliveries_total\{outcome="gave_up"\} 1$/m);
    } finally {
      receiver.answerWith(() => 204);
      await unsubscribe(endpoint);
    }
  });
});

describe('retention', () => {
  test('finished deliveries go with their events after AUDIT_RETENTION_DAYS', async () => {
    const shortMemory = await startService({
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', AUDIT_RETENTION_DAYS: '1' },
      retentionCheckEveryMs: 50,
    });
    try {
      const created = await expectStatus(
        shortMemory.call('/admin/webhooks', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { url: `${receiver.url}/retention`, events: ['mfa.reset_by_operator'] },
        }),
        201,
      );
      const log = () =>
        expectStatus(shortMemory.call(`/admin/webhooks/${created.id}/deliveries`, { token: ADMIN_TOKEN }), 200);
      const userId = await shortMemory.createUser('short-memory', PASSWORD);
      await expectStatus(shortMemory.call(`/admin/users/${userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      await eventually(async () => (await log()).deliveries.some((line: any) => line.status === 'succeeded'));
      shortMemory.clock.advance(2 * 86_400);
      // The clean-up's next check (every 50 ms here) finds it due and deletes the delivery.
      await eventually(async () => (await log()).deliveries.length === 0);
    } finally {
      await shortMemory.close();
    }
  });
});
