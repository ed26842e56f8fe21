// The outbox's claims, on the pass's database with real concurrency (PostgreSQL's pool and SKIP
// LOCKED; SQLite serialises, which must give the same answers).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import {
  claimDueDeliveries,
  describeOutbox,
  finishAttempt,
  insertDeliveries,
  insertEndpoint,
  listDeliveryAttempts,
} from '../../src/store/webhooks.js';
import { openTestDatabase } from '../support/database.js';

let db: Kysely<Database>;
let close: () => Promise<void>;
const NOW = new Date('2026-11-23T12:00:00.000Z');
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
let endpointCount = 0;

before(async () => {
  ({ db, close } = await openTestDatabase());
  await migrateToLatest(db);
});
after(() => close());

/** A new endpoint with `count` deliveries due at NOW; returns the endpoint id. */
async function endpointWithDeliveries(count: number): Promise<string> {
  const endpointId = `endpoint-${++endpointCount}`;
  await insertEndpoint(db, {
    id: endpointId,
    url: 'https://hooks.example.com/',
    events: [],
    sealedSecret: 's',
    createdAt: NOW,
  });
  await insertDeliveries(
    db,
    Array.from({ length: count }, (_, index) => ({
      id: `${endpointId}-msg-${index}`,
      endpointId,
      eventType: 'mfa.enabled',
      payload: '{}',
      createdAt: NOW,
    })),
  );
  return endpointId;
}

/** Finishes every pending delivery of the test database, so the next test starts with an empty outbox. */
async function drain() {
  for (;;) {
    const claimed = await claimDueDeliveries(db, { now: at(10_000_000), leaseUntil: at(10_000_020), limit: 100 });
    if (claimed.length === 0) return;
    for (const delivery of claimed) {
      await finishAttempt(db, { delivery, status: 'succeeded', next: { status: 'succeeded', dueAt: at(0) } });
    }
  }
}

describe('claiming due deliveries', () => {
  test('of 10 workers claiming at once, each due delivery goes to exactly one', async () => {
    await endpointWithDeliveries(30);
    const claims = await Promise.all(
      Array.from({ length: 10 }, () => claimDueDeliveries(db, { now: NOW, leaseUntil: at(20), limit: 4 })),
    );
    const ids = claims.flat().map((delivery) => delivery.id);
    assert.equal(new Set(ids).size, ids.length, 'no delivery claimed twice');
    // Everything still due is claimed by a later round: none is lost.
    const rest = await claimDueDeliveries(db, { now: NOW, leaseUntil: at(20), limit: 100 });
    assert.equal(ids.length + rest.length, 30);
    assert.ok(claims.flat().every((delivery) => delivery.attempt === 1));
    await drain();
  });

  test('a claim is not due again until its lease lapses; then it is taken over and the lost attempt marked failed', async () => {
    const endpointId = await endpointWithDeliveries(1);
    const [first] = await claimDueDeliveries(db, { now: NOW, leaseUntil: at(20), limit: 10 });
    assert.ok(first);
    assert.deepEqual(await claimDueDeliveries(db, { now: at(19), leaseUntil: at(39), limit: 10 }), []);
    const [second] = await claimDueDeliveries(db, { now: at(20), leaseUntil: at(40), limit: 10 });
    assert.equal(second?.id, first.id);
    assert.equal(second?.attempt, 2);
    assert.deepEqual(
      (await listDeliveryAttempts(db, endpointId, 10)).map((line) => [line.attempt, line.status]),
      [
        [2, 'pending'],
        [1, 'failed'],
      ],
    );

    // The first worker finishes late: its attempt is recorded, the delivery stays the second's.
    await finishAttempt(db, {
      delivery: first,
      status: 'succeeded',
      responseStatus: 200,
      next: { status: 'succeeded', dueAt: at(25) },
    });
    assert.equal((await describeOutbox(db)).depth, 1, 'still pending: the second attempt decides');
    await finishAttempt(db, {
      delivery: second,
      status: 'failed',
      responseStatus: 500,
      next: { status: 'pending', dueAt: at(60) },
    });
    const log = await listDeliveryAttempts(db, endpointId, 10);
    assert.deepEqual(
      log.map((line) => [line.attempt, line.status, line.responseStatus]),
      [
        [3, 'pending', undefined],
        [2, 'failed', 500],
        [1, 'succeeded', 200],
      ],
    );
    assert.equal(log[0]?.attemptedAt, undefined, 'the next attempt is waiting');
    assert.deepEqual(await describeOutbox(db), { depth: 1, oldestCreatedAt: NOW });
    await drain();
    assert.deepEqual(await describeOutbox(db), { depth: 0, oldestCreatedAt: undefined });
  });

  test('deliveries the caller is still attempting are not claimed again, whatever their lease says', async () => {
    await endpointWithDeliveries(2);
    const [mine] = await claimDueDeliveries(db, { now: NOW, leaseUntil: at(20), limit: 1 });
    assert.ok(mine);
    const later = await claimDueDeliveries(db, { now: at(60), leaseUntil: at(80), limit: 10, exceptIds: [mine.id] });
    assert.equal(later.length, 1);
    assert.notEqual(later[0]?.id, mine.id);
    await drain();
  });
});
