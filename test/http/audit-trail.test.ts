import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { eventually } from '../support/webhook-receiver.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

function events(userId: string, token = ADMIN_TOKEN) {
  return service.call(`/admin/users/${userId}/events`, { token });
}

describe('the audit trail', () => {
  test('records each security event with time, client address and outcome, and never a secret', async () => {
    const phone = nextPhone();
    const { userId, username, token } = await service.createUserWithMfa('audited', PASSWORD, phone);
    await expectStatus(service.login(username, 'wrong password'), 400);
    await expectStatus(service.login(username, PASSWORD), 200);
    const code = service.twilio.lastCodeFor(`+${phone}`);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 400);
    // Four more wrong codes use up the 5 attempts and the guess budget's free run: the sixth waits,
    // and after the wait finds the code dead.
    for (let attempt = 0; attempt < 4; attempt++)
      await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 400);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 429);
    service.clock.advance(60);
    await expectStatus(service.login(username, PASSWORD, { mfa_code: wrong }), 400);
    service.clock.advance(120);
    const backup = (await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token }), 200)).backup_codes;
    const tokens = await expectStatus(service.login(username, PASSWORD, { backup_code: backup[0] }), 200);
    const refreshed = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      }),
      200,
    );
    await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      }),
      400,
    );
    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);

    const body = await expectStatus(events(userId), 200);
    const seen = body.events.map((event: { type: string; outcome: string }) => `${event.type}:${event.outcome}`);
    for (const expected of [
      'mfa_enabled:succeeded',
      'login:mfa_required',
      'login:succeeded',
      'login:failed',
      'mfa_code_check:wrong',
      'mfa_code_check:dead',
      'mfa_throttled:refused',
      'backup_codes_regenerated:succeeded',
      'backup_code_used:succeeded',
      'refresh_token_reuse:login_revoked',
      'mfa_disabled:succeeded',
    ]) {
      assert.ok(seen.includes(expected), `${expected} missing from ${seen}`);
    }
    for (const event of body.events) {
      assert.equal(event.client_address, '127.0.0.1');
      assert.ok(!Number.isNaN(Date.parse(event.occurred_at)));
    }
    const times = body.events.map((event: { occurred_at: string }) => event.occurred_at);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

    const text = JSON.stringify(body);
    for (const secret of [
      PASSWORD,
      code,
      ...backup,
      tokens.access_token,
      tokens.refresh_token,
      refreshed.refresh_token,
      phone,
    ]) {
      assert.ok(!text.includes(secret), 'the audit trail holds no secret and no phone number');
    }
  });

  test('needs the admin token, and answers 404 for an unknown user', async () => {
    const userId = await service.createUser('audited-2', PASSWORD);
    assert.equal((await expectStatus(events(userId, 'not the admin token'), 401)).error, 'invalid_token');
    assert.equal((await expectStatus(events('no-such-user'), 404)).error, 'not_found');
  });
});

describe('retention', () => {
  test('events past AUDIT_RETENTION_DAYS are deleted by the hourly clean-up, in batches, not by a request', async () => {
    // Asked once an hour of real time: only its check at start runs during the test.
    const shortMemory = await startService({ env: { AUDIT_RETENTION_DAYS: '1' }, retentionCheckEveryMs: 3_600_000 });
    const stopNodes: (() => Promise<void>)[] = [];
    try {
      const claims = () =>
        shortMemory.execute(sql<{ due_at: string }>`select due_at from scheduled_job where name = 'audit_retention'`);
      await eventually(async () => (await claims()).length === 1);
      const now = shortMemory.clock.now().getTime();
      // 1 234 events three days old: three batches of 500.
      const rows = Array.from(
        { length: 1234 },
        (_, index) =>
          sql`(${`old-${index}`}, ${new Date(now - 3 * 86_400_000 + index).toISOString()}, 'login', 'failed')`,
      );
      await shortMemory.execute(
        sql`insert into security_event (id, occurred_at, type, outcome) values ${sql.join(rows)}`,
      );
      // A mail sent three days ago goes with them; one still waiting to be sent stays, however old.
      const threeDaysAgo = new Date(now - 3 * 86_400_000).toISOString();
      await shortMemory.execute(
        sql`insert into outbox_message (id, channel, kind, sealed_message, status, attempts, due_at, created_at)
            values ('old-sent', 'email', 'notice', '', 'sent', 1, ${threeDaysAgo}, ${threeDaysAgo}),
                   ('old-waiting', 'email', 'notice', '', 'pending', 1, '9999-01-01T00:00:00.000Z', ${threeDaysAgo})`,
      );
      await shortMemory.createUser('forgotten', PASSWORD);
      await expectStatus(shortMemory.login('forgotten', PASSWORD), 200);
      const countBefore = async (cutoff: string) =>
        Number(
          (
            await shortMemory.execute<{ n: number | string }>(
              sql`select count(*) as n from security_event where occurred_at < ${cutoff}`,
            )
          )[0]?.n,
        );

      shortMemory.clock.advance(2 * 86_400);
      const cutoff = new Date(shortMemory.clock.now().getTime() - 86_400_000).toISOString();
      const past = await countBefore(cutoff);
      assert.ok(past > 1234, `the old events and the first login (${past})`);
      // This login writes the hour's first event, which used to run the clean-up inside it.
      await expectStatus(shortMemory.login('forgotten', PASSWORD), 200);
      assert.equal(await countBefore(cutoff), past, 'the request deleted nothing');

      // Another node starts: its first check finds the job due (by the clock) and claims it.
      stopNodes.push(await shortMemory.startAnotherNode());
      await eventually(async () => (await countBefore(cutoff)) === 0);
      assert.equal(await countBefore('9999'), 1, "the day's login is kept");
      await eventually(() => shortMemory.log().includes('retention clean-up done'));
      const done = shortMemory
        .log()
        .split('\n')
        .filter((line) => line.includes('retention clean-up done'))
        .map((line) => JSON.parse(line));
      assert.equal(done.length, 1, 'one node ran it');
      assert.equal(done[0].security_events, past);
      assert.equal(done[0].outbox_messages, 1);
      const outbox = await shortMemory.execute<{ id: string }>(sql`select id from outbox_message`);
      assert.deepEqual(
        outbox.map((row) => row.id),
        ['old-waiting'],
      );
      const dueAt = (await claims())[0]?.due_at ?? '';
      assert.ok(dueAt > shortMemory.clock.now().toISOString(), 'claimed again an hour on');
    } finally {
      await Promise.all(stopNodes.map((stop) => stop()));
      await shortMemory.close();
    }
  });
});
