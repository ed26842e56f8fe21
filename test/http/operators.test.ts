// Operators (CONTRACT §21): accounts granted the role by the admin command line call the admin API
// with their own access token, which must come from a sign-in with a second factor, fresh within
// STEP_UP_MAX_AGE for a change. ADMIN_TOKEN still works for scripts. Every change an operator makes
// is an audit event and an operator.action webhook naming them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runAdmin } from '../support/admin-cli.js';
import { createTotpUser, PASSWORD } from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

let service: Service;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

before(async () => {
  service = await startService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startWebhookReceiver();
});
after(async () => {
  await service.close();
  await receiver.close();
});

/** A user with an authenticator app; `signIn` logs in with a fresh code (aal2). */
async function userWithApp(username: string) {
  const user = await createTotpUser(service, username);
  return {
    userId: user.userId,
    signIn: () => service.accessToken(username, PASSWORD, { mfa_code: user.code() }),
  };
}

async function grant(command: 'grant-operator' | 'revoke-operator', username: string) {
  const run = await runAdmin(service.config.databaseUrl, [command, username]);
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}

describe('operators call the admin API with their own sign-in (CONTRACT §21)', () => {
  let operator: Awaited<ReturnType<typeof userWithApp>>;
  let target: string;

  before(async () => {
    operator = await userWithApp('olga');
    target = await service.createUser('target-user', PASSWORD);
  });

  test('ADMIN_TOKEN still works for scripts', async () => {
    await expectStatus(service.call('/admin/users?username=olga', { token: ADMIN_TOKEN }), 200);
  });

  test('an account that is not an operator gets 403 not_an_operator, whatever its sign-in', async () => {
    const token = await operator.signIn();
    const refused = await expectStatus(service.call('/admin/users?username=olga', { token }), 403);
    assert.equal(refused.error, 'not_an_operator');
    assert.match(refused.error_description, /grant-operator/);
  });

  test('granted by the command line, an operator signed in with a second factor reads and changes', async () => {
    assert.match(await grant('grant-operator', 'olga'), /olga is an operator/);
    const token = await operator.signIn();
    const found = await expectStatus(service.call('/admin/users?username=target-user', { token }), 200);
    assert.equal(found.id, target);
    await expectStatus(service.call(`/admin/users/${target}/mfa`, { method: 'DELETE', token }), 204);
  });

  test('a password-only sign-in of an operator gets RFC 9470’s 401 asking for aal2', async () => {
    // An operator without a second factor: the password alone gives tokens, which the admin API refuses.
    await service.createUser('paul', PASSWORD);
    assert.match(await grant('grant-operator', 'paul'), /paul is an operator/);
    const weak = await service.accessToken('paul', PASSWORD);
    const response = await service.call('/admin/users?username=paul', { token: weak });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /insufficient_user_authentication.*acr_values="aal2"/);
  });

  test('a change needs the sign-in fresh: after STEP_UP_MAX_AGE it is refused with max_age, reads go on', async () => {
    const token = await operator.signIn();
    service.clock.advance(601);
    await expectStatus(service.call('/admin/users?username=target-user', { token }), 200);
    const response = await service.call(`/admin/users/${target}/mfa`, { method: 'DELETE', token });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /max_age=600/);
  });

  test('every change is an audit event and an operator.action webhook naming the operator, the action and its target', async () => {
    const subscribed = await expectStatus(
      service.call('/admin/webhooks', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { url: `${receiver.url}/ops`, events: ['operator.action'] },
      }),
      201,
    );
    const token = await operator.signIn();
    await expectStatus(service.call(`/admin/users/${target}/invite`, { method: 'POST', token }), 201);
    const { events } = await expectStatus(
      service.call(`/admin/users/${operator.userId}/events`, { token: ADMIN_TOKEN }),
      200,
    );
    const recorded = events.find(
      (event: { type: string; detail?: { action?: string } }) =>
        event.type === 'operator_action' && event.detail?.action === 'POST /admin/users/:id/invite',
    );
    assert.deepEqual(recorded?.detail, {
      operator_id: operator.userId,
      action: 'POST /admin/users/:id/invite',
      target_id: target,
    });
    const [delivery] = await receiver.waitFor('/ops', 1);
    assert.ok(delivery, 'the webhook arrived');
    const body = JSON.parse(delivery.body);
    assert.equal(body.type, 'operator.action');
    assert.deepEqual(
      { operator_id: body.data.operator_id, action: body.data.action, target_id: body.data.target_id },
      { operator_id: operator.userId, action: 'POST /admin/users/:id/invite', target_id: target },
    );
    await expectStatus(service.call(`/admin/webhooks/${subscribed.id}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
  });

  test('revoked, the operator’s next call is refused', async () => {
    const token = await operator.signIn();
    assert.match(await grant('revoke-operator', 'olga'), /no longer an operator/);
    assert.equal(
      (await expectStatus(service.call('/admin/users?username=olga', { token }), 403)).error,
      'not_an_operator',
    );
  });
});

describe('what the console reads (CONTRACT §21), for scripts too', () => {
  test('users by the start of their name, any case, a page at a time', async () => {
    for (const name of ['Searchable-b', 'searchable-a', 'searchable-c', 'other-name']) {
      await service.createUser(name, PASSWORD);
    }
    const first = await expectStatus(
      service.call('/admin/users/search?q=SEARCHABLE&limit=2', { token: ADMIN_TOKEN }),
      200,
    );
    assert.deepEqual(
      first.users.map((user: { username: string }) => user.username),
      ['searchable-a', 'Searchable-b'],
    );
    assert.equal(first.users[0].mfa_enabled, false);
    assert.equal(first.next_after, 'Searchable-b');
    const second = await expectStatus(
      service.call(`/admin/users/search?q=searchable&limit=2&after=${first.next_after}`, { token: ADMIN_TOKEN }),
      200,
    );
    assert.deepEqual(
      second.users.map((user: { username: string }) => user.username),
      ['searchable-c'],
    );
    assert.equal(second.next_after, undefined, 'the last page says so');
    const refused = await expectStatus(service.call('/admin/users/search?limit=500', { token: ADMIN_TOKEN }), 400);
    assert.match(refused.error_description, /limit/);
  });

  test('sign-ins per hour, counted by the database: successes, refusals and throttles', async () => {
    await service.createUser('counted', PASSWORD);
    const before = await expectStatus(service.call('/admin/stats/sign-ins?hours=1', { token: ADMIN_TOKEN }), 200);
    const total = (stats: { rows: { succeeded: number; refused: number }[] }) =>
      stats.rows.reduce(
        (sum, row) => ({ succeeded: sum.succeeded + row.succeeded, refused: sum.refused + row.refused }),
        { succeeded: 0, refused: 0 },
      );
    await expectStatus(service.login('counted', PASSWORD), 200);
    await expectStatus(service.login('counted', 'not the password'), 400);
    const after = await expectStatus(service.call('/admin/stats/sign-ins?hours=1', { token: ADMIN_TOKEN }), 200);
    assert.deepEqual(total(after), {
      succeeded: total(before).succeeded + 1,
      refused: total(before).refused + 1,
    });
    assert.match(after.rows.at(-1).hour, /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/);
  });

  test('enrolment SMS per country per hour', async () => {
    const name = 'sms-counted';
    await service.createUser(name, PASSWORD);
    const token = await service.accessToken(name, PASSWORD);
    await expectStatus(
      service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: '14155552671' } }),
      200,
    );
    const stats = await expectStatus(service.call('/admin/stats/sms', { token: ADMIN_TOKEN }), 200);
    const us = stats.rows.filter((row: { country: string }) => row.country === 'US');
    assert.ok(us.length > 0 && us.at(-1).sends >= 1, JSON.stringify(stats));
    assert.ok(new Date(stats.since).getTime() <= Date.now() - 166 * 3_600_000, 'the last 7 days by default');
  });
});
