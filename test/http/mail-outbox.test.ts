import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createMailUserWithSms } from '../support/mail-users.js';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';

// CONTRACT §16 and §20: mail goes through an outbox. The message is written with the change that
// causes it and sent by a worker: retried with backoff when the server refuses or is silent,
// never lost, sent once; sealed while it waits and blanked once it is sent.

const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;

interface OutboxRow {
  kind: string;
  status: string;
  attempts: number;
  last_error: string | null;
  sealed_message: string;
}

function outboxOf(service: Service, userId: string): Promise<OutboxRow[]> {
  return service.rows(
    sql<OutboxRow>`select kind, status, attempts, last_error, sealed_message from outbox_message
      where user_id = ${userId} order by created_at, id`,
  );
}

/** Polls until `check` holds: the worker runs on real timers (every 0.5 s). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (performance.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

/** The user's messages once the first is done (sent or given up). */
function finished(service: Service, userId: string): Promise<OutboxRow[]> {
  return eventually(
    () => outboxOf(service, userId),
    ([row]) => row?.status !== 'pending',
    'the message is done',
  );
}

async function withService(
  smtp: SmtpTestServer,
  env: Record<string, string>,
  run: (service: Service) => Promise<void>,
) {
  const service = await startService({ env: { SMTP_URL: smtp.url, ...env } });
  try {
    await run(service);
  } finally {
    await service.close();
    await smtp.close();
  }
}

async function requestCode(service: Service, username: string, email: string) {
  const userId = await service.createUser(username, PASSWORD);
  const token = await service.accessToken(username, PASSWORD);
  const answer = await service.call('/mfa/email/request/', { method: 'PUT', token, body: { email } });
  return { userId, token, answer };
}

/** A user with a verified address who adds a factor: a `factor_added` notice goes in the outbox. */
async function noticedUser(service: Service, username: string, email: string): Promise<string> {
  return (await createMailUserWithSms(service, username, PASSWORD, { email })).userId;
}

describe('mail through the outbox', () => {
  test('a server that refuses connections: a notice is retried with backoff and arrives once, when the server takes mail', async () => {
    const smtp = await startSmtpServer({ mode: 'refuse' });
    await withService(smtp, {}, async (service) => {
      const email = 'refused-first@mail.example';
      const userId = await noticedUser(service, 'refused-first', email);
      const [waiting] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.attempts === 1 && row.last_error !== null,
        'the first attempt is recorded',
      );
      assert.equal(waiting?.kind, 'notice.factor_added');
      assert.equal(waiting?.status, 'pending');
      assert.equal(waiting?.last_error, 'mail_unavailable');
      assert.match(waiting?.sealed_message ?? '', /^sealed:v1:/, 'the message waits sealed');

      // The first retry is due 2.5 to 5 s later: before then, polls leave it alone.
      await sleep(1200);
      assert.equal((await outboxOf(service, userId))[0]?.attempts, 1, 'not retried before its time');
      smtp.startAccepting();
      service.clock.advance(6);
      const mail = await smtp.waitForMail(email);
      assert.match(mail.raw, /^Message-ID: <[0-9a-f-]{36}@/im, 'one Message-ID for every attempt at it');
      const [sent] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.status === 'sent',
        'the message is recorded sent',
      );
      assert.equal(sent?.attempts, 2);
      assert.equal(sent?.sealed_message, '', 'blanked once sent');
      service.clock.advance(3600);
      await sleep(1200);
      assert.equal(smtp.mailTo(email).length, 1, 'sent once');
    });
  });

  test('a server that never greets: nothing was sent, so the notice is tried again', async () => {
    const smtp = await startSmtpServer({ mode: 'hang' });
    await withService(smtp, { SMTP_TIMEOUT_MS: '300' }, async (service) => {
      const userId = await noticedUser(service, 'silent-server', 'silent@mail.example');
      await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.attempts === 1 && row.last_error !== null,
        'the first attempt is recorded',
      );
      service.clock.advance(6);
      const [retried] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => (row?.attempts ?? 0) >= 2 && row?.status === 'pending',
        'the message is tried again',
      );
      assert.equal(retried?.last_error, 'mail_timeout');
    });
  });

  test('no address and no text in the outbox while the mail waits; an address refused is given up at once', async () => {
    const smtp = await startSmtpServer({ mode: 'refuse', refuseRecipient: (address) => address.startsWith('no-') });
    await withService(smtp, {}, async (service) => {
      const email = 'sealed@mail.example';
      const userId = await noticedUser(service, 'sealed-mail', email);
      const [row] = await outboxOf(service, userId);
      assert.equal(row?.status, 'pending');
      const outbox = JSON.stringify(await service.rows(sql`select * from outbox_message where user_id = ${userId}`));
      assert.ok(!outbox.includes(email), 'the address is sealed');
      assert.ok(!outbox.includes('second factor'), 'the text is sealed');

      smtp.startAccepting();
      const refused = await requestCode(service, 'refused-address', 'no-such@mail.example');
      assert.equal(((await refused.answer.json()) as { error: string }).error, 'email_address_rejected');
      const [given] = await outboxOf(service, refused.userId);
      assert.equal(given?.status, 'failed', 'a refused address is not retried');
      assert.equal(given?.sealed_message, '');
    });
  });

  test('a slow relay within SMTP_TIMEOUT_MS at each step gets a notice once, however long the whole send takes', async () => {
    // 600 ms before the greeting, 700 ms of scanning after the message: 1.3 s in all, each step under 1 s.
    const smtp = await startSmtpServer({ greetingDelayMs: 600, scanDelayMs: 700 });
    await withService(smtp, { SMTP_TIMEOUT_MS: '1000' }, async (service) => {
      const email = 'slow-relay@mail.example';
      const userId = await noticedUser(service, 'slow-relay', email);
      const [sent] = await finished(service, userId);
      assert.deepEqual([sent?.status, sent?.attempts], ['sent', 1]);
      service.clock.advance(120);
      await sleep(1500);
      assert.equal(smtp.mailTo(email).length, 1, 'the relay got the notice once');
    });
  });

  test('a relay silent after the message may have kept it: the notice is not sent again', async () => {
    const smtp = await startSmtpServer({ scanDelayMs: 1500 });
    await withService(smtp, { SMTP_TIMEOUT_MS: '1000' }, async (service) => {
      const email = 'silent-after-data@mail.example';
      const userId = await noticedUser(service, 'silent-after-data', email);
      const [done] = await finished(service, userId);
      assert.deepEqual([done?.status, done?.last_error, done?.sealed_message], ['failed', 'mail_timeout', '']);
      for (let step = 0; step < 3; step += 1) {
        service.clock.advance(600);
        await sleep(1000);
      }
      assert.equal(smtp.mailTo(email).length, 1, 'kept by the relay once, never sent again');
      assert.equal((await outboxOf(service, userId)).length, 1);
    });
  });

  test('a message past its expiry (an email code mail once the code is dead) is given up unsent', async () => {
    const smtp = await startSmtpServer({ mode: 'refuse' });
    await withService(smtp, {}, async (service) => {
      const email = 'expired@mail.example';
      const userId = await noticedUser(service, 'expired-mail', email);
      await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.attempts === 1 && row.last_error !== null,
        'the first attempt is recorded',
      );
      // As an email code's mail is written: of no use after a time, here one already past.
      const expiresAt = new Date(service.clock.now().getTime() + 1000).toISOString();
      await service.execute(sql`update outbox_message set expires_at = ${expiresAt} where user_id = ${userId}`);
      smtp.startAccepting();
      service.clock.advance(6);
      const [given] = await finished(service, userId);
      assert.deepEqual([given?.status, given?.last_error, given?.sealed_message], ['failed', 'expired', '']);
      assert.deepEqual(smtp.mailTo(email), []);
    });
  });

  test("a deleted user's waiting messages are deleted with them, never sent", async () => {
    const smtp = await startSmtpServer({ mode: 'refuse' });
    await withService(smtp, {}, async (service) => {
      const email = 'deleted-user@mail.example';
      const userId = await noticedUser(service, 'deleted-user', email);
      assert.equal((await outboxOf(service, userId))[0]?.status, 'pending');
      await expectStatus(service.call(`/admin/users/${userId}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      assert.deepEqual(await outboxOf(service, userId), []);
      smtp.startAccepting();
      service.clock.advance(3600);
      await sleep(1500);
      assert.deepEqual(smtp.mailTo(email), []);
    });
  });
});
