// The message outbox's claims (mail and SMS, CONTRACT §16/§20), on the pass's database with real
// concurrency: PostgreSQL's pool and SKIP LOCKED; SQLite serialises, which must give the same answers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { claimDueMessages, finishMessageAttempt, insertOutboxMessage } from '../../src/store/outbox-messages.js';
import { openTestDatabase } from '../support/database.js';

let db: Kysely<Database>;
let close: () => Promise<void>;
const NOW = new Date('2026-11-27T12:00:00.000Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
let userCount = 0;

/** The user's messages as the table holds them: states, never the text. */
function rowsOf(userId: string) {
  return db
    .selectFrom('outbox_message')
    .select(['status', 'attempts', 'last_error'])
    .where('user_id', '=', userId)
    .execute();
}

before(async () => {
  ({ db, close } = await openTestDatabase());
  await migrateToLatest(db);
});
after(() => close());

/** `count` messages due at `createdAt` for a user of their own; returns the user id. */
async function messagesFor(count: number, createdAt = NOW): Promise<string> {
  const userId = `user-${++userCount}`;
  for (let index = 0; index < count; index += 1) {
    await insertOutboxMessage(db, {
      id: `${userId}-message-${index}`,
      channel: 'email',
      kind: 'notice.factor_added',
      userId,
      sealedMessage: 'sealed:v1:x',
      createdAt,
    });
  }
  return userId;
}

/** Sends (records sent) every message due by `seconds`, so that each test starts with none due. */
async function drain(seconds = 10_000_000) {
  for (;;) {
    const claimed = await claimDueMessages(db, { now: at(seconds), leaseUntil: at(seconds + 150), limit: 100 });
    if (claimed.length === 0) return;
    for (const message of claimed) {
      await finishMessageAttempt(db, { id: message.id, leaseId: message.leaseId, status: 'sent', dueAt: at(seconds) });
    }
  }
}

describe('claiming messages', () => {
  test('of 8 workers claiming 40 due messages at once, each message goes to exactly one', async () => {
    await drain();
    const userId = await messagesFor(40);
    const claims = await Promise.all(
      Array.from({ length: 8 }, () => claimDueMessages(db, { now: at(1), leaseUntil: at(151), limit: 10 })),
    );
    const ids = claims.flat().map((message) => message.id);
    assert.equal(ids.length, 40, 'every due message is claimed');
    assert.equal(new Set(ids).size, 40, 'none twice');
    assert.ok(claims.flat().every((message) => message.attempt === 1));
    assert.deepEqual([...new Set((await rowsOf(userId)).map((row) => row.attempts))], [1]);
  });

  test('a claim holds until its lease lapses; then another worker takes it, and the first one can no longer finish it', async () => {
    await drain();
    await messagesFor(1);
    const [first] = await claimDueMessages(db, { now: at(1), leaseUntil: at(151), limit: 10 });
    assert.ok(first);
    assert.deepEqual(await claimDueMessages(db, { now: at(100), leaseUntil: at(250), limit: 10 }), []);
    const [second] = await claimDueMessages(db, { now: at(152), leaseUntil: at(302), limit: 10 });
    assert.equal(second?.id, first.id);
    assert.equal(second?.attempt, 2);
    assert.equal(
      await finishMessageAttempt(db, { id: first.id, leaseId: first.leaseId, status: 'sent', dueAt: at(153) }),
      false,
      'the lapsed claim changes nothing',
    );
    assert.equal(
      await finishMessageAttempt(db, { id: first.id, leaseId: second?.leaseId ?? '', status: 'sent', dueAt: at(153) }),
      true,
    );
  });

  test('a failed attempt is due again at its retry time; sent or given up, the message is blanked and never claimed again', async () => {
    await drain();
    const userId = await messagesFor(2);
    const claimed = await claimDueMessages(db, { now: at(1), leaseUntil: at(151), limit: 10 });
    const [retried, refused] = claimed;
    assert.ok(retried && refused);
    await finishMessageAttempt(db, {
      id: retried.id,
      leaseId: retried.leaseId,
      status: 'pending',
      dueAt: at(10),
      error: 'mail_unavailable',
    });
    await finishMessageAttempt(db, {
      id: refused.id,
      leaseId: refused.leaseId,
      status: 'failed',
      dueAt: at(2),
      error: 'email_address_rejected',
    });
    assert.deepEqual(await claimDueMessages(db, { now: at(9), leaseUntil: at(159), limit: 10 }), []);
    const [again] = await claimDueMessages(db, { now: at(10), leaseUntil: at(160), limit: 10 });
    assert.equal(again?.id, retried.id);
    const states = await rowsOf(userId);
    assert.deepEqual(
      states
        .map(({ status, last_error }) => ({ status, lastError: last_error }))
        .sort((a, b) => a.status.localeCompare(b.status)),
      [
        { status: 'failed', lastError: 'email_address_rejected' },
        { status: 'pending', lastError: 'mail_unavailable' },
      ],
    );
    const blanked = await db
      .selectFrom('outbox_message')
      .select('sealed_message')
      .where('id', '=', refused.id)
      .executeTakeFirstOrThrow();
    assert.equal(blanked.sealed_message, '');
  });
});
