import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
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
  const created = await expectStatus(
    service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username, password: PASSWORD, email } }),
    201,
  );
  await service.enrolSms(await service.accessToken(username, PASSWORD), nextPhone());
  return (created as { id: string }).id;
}

describe('mail through the outbox', () => {
  test('a server that refuses connections: the request is answered, the mail is retried with backoff and arrives once, when the server takes mail', async () => {
    const smtp = await startSmtpServer({ mode: 'refuse' });
    await withService(smtp, {}, async (service) => {
      const email = 'refused-first@mail.example';
      const { userId, token, answer } = await requestCode(service, 'refused-first', email);
      assert.deepEqual(await expectStatus(Promise.resolve(answer), 200), { email, verified: false });
      const [waiting] = await outboxOf(service, userId);
      assert.equal(waiting?.kind, 'email_code');
      assert.equal(waiting?.status, 'pending');
      assert.equal(waiting?.attempts, 1);
      assert.equal(waiting?.last_error, 'mail_unavailable');
      assert.match(waiting?.sealed_message ?? '', /^sealed:v1:/, 'the message waits sealed');

      // The first retry is due 2.5 to 5 s later: before then, polls leave it alone.
      await sleep(1200);
      assert.equal((await outboxOf(service, userId))[0]?.attempts, 1, 'not retried before its time');
      smtp.startAccepting();
      service.clock.advance(6);
      const mail = await smtp.waitForMail(email);
      assert.match(mail.raw, /^Message-ID: <[0-9a-f-]{36}@/im, 'one Message-ID for every attempt at it');
      const code = smtp.lastCodeFor(email);
      await expectStatus(service.call('/mfa/email/verify/', { method: 'PUT', token, body: { mfa_code: code } }), 200);

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

  test('a server that never answers: the request is not held past SMTP_TIMEOUT_MS, the code stands, and the mail is tried again', async () => {
    const smtp = await startSmtpServer({ mode: 'hang' });
    await withService(smtp, { SMTP_TIMEOUT_MS: '300' }, async (service) => {
      const email = 'silent@mail.example';
      const started = performance.now();
      const { userId, token, answer } = await requestCode(service, 'silent-server', email);
      assert.equal(answer.status, 200);
      assert.ok(performance.now() - started < 3000, 'the request is not held by the silent server');
      // The code is kept: it works if the mail arrives, so a second request waits out the cooldown.
      const again = await service.call('/mfa/email/request/', { method: 'PUT', token, body: { email } });
      assert.equal(again.status, 429);
      service.clock.advance(6);
      const [retried] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => (row?.attempts ?? 0) >= 2 && row?.status === 'pending',
        'the message is tried again',
      );
      assert.equal(retried?.last_error, 'mail_timeout');
    });
  });

  test('no code and no address in the outbox while the mail waits; an address refused is given up at once', async () => {
    const smtp = await startSmtpServer({ mode: 'refuse', refuseRecipient: (address) => address.startsWith('no-') });
    await withService(smtp, {}, async (service) => {
      const email = 'sealed@mail.example';
      const { userId } = await requestCode(service, 'sealed-mail', email);
      const [row] = await outboxOf(service, userId);
      assert.equal(row?.status, 'pending');
      const outbox = JSON.stringify(await service.rows(sql`select * from outbox_message where user_id = ${userId}`));
      assert.ok(!outbox.includes(email), 'the address is sealed');
      assert.ok(!outbox.includes('verification code'), 'the text is sealed');

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
      const [sent] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.status !== 'pending',
        'the notice is sent',
      );
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
      const [done] = await eventually(
        () => outboxOf(service, userId),
        ([row]) => row?.status !== 'pending',
        'the attempt is recorded',
      );
      assert.deepEqual([done?.status, done?.last_error, done?.sealed_message], ['failed', 'mail_timeout', '']);
      for (let step = 0; step < 3; step += 1) {
        service.clock.advance(600);
        await sleep(1000);
      }
      assert.equal(smtp.mailTo(email).length, 1, 'kept by the relay once, never sent again');
      assert.equal((await outboxOf(service, userId)).length, 1);
    });
  });
});
