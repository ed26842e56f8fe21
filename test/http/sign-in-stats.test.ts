// The console's sign-ins per hour (CONTRACT §21) at scale (issue 33): an hour that has settled is
// counted from the audit trail once and kept in sign_in_hour; each request counts only the hours
// since then. These tests show the kept counts are what the audit trail said, that a request does
// not count a settled hour again, that two requests at once keep an hour once, that the retention
// worker keeps them counted before a request asks, and that the hours past the week are deleted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_TOKEN, expectStatus, type Service, startService, TestClock } from '../support/service.js';
import { eventually } from '../support/webhook-receiver.js';

const HOUR_MS = 3_600_000;
let service: Service;
const clock = new TestClock(Date.parse('2026-03-01T10:20:00.000Z'));

before(async () => {
  // Its own worker checks at start only within the tests; the nodes they start run the hourly work.
  service = await startService({ clock, env: { AUDIT_RETENTION_DAYS: '2' }, retentionCheckEveryMs: 3_600_000 });
});
after(async () => {
  await service.close();
});

type Stats = { rows: { hour: string; succeeded: number; refused: number; throttled: number }[] };
const stats = async (hours = 168): Promise<Stats> =>
  expectStatus(service.call(`/admin/stats/sign-ins?hours=${hours}`, { token: ADMIN_TOKEN }), 200);
const keptHours = () =>
  service.execute<{ hour: string; logins: number }>(sql`select hour, logins from sign_in_hour order by hour`);

describe('sign-ins per hour keep the hours that have settled', () => {
  test('an ended hour is counted once and kept; later requests read it, not the audit trail', async () => {
    await service.createUser('hourly', 'correct horse battery');
    await expectStatus(service.login('hourly', 'correct horse battery'), 200);
    await expectStatus(service.login('hourly', 'correct horse battery'), 200);
    await expectStatus(service.login('hourly', 'not the password'), 400);
    const tenOClock = '2026-03-01T10:00:00.000Z';
    const live = await stats();
    assert.deepEqual(live.rows, [{ hour: tenOClock, succeeded: 2, refused: 1, throttled: 0 }]);
    const keptBefore = await keptHours();
    assert.ok(keptBefore.length > 0, 'the hours before this one are kept');
    assert.ok(
      keptBefore.every((row) => row.hour < tenOClock && Number(row.logins) === 0),
      'the present hour is not kept: it may still change',
    );

    clock.advance((50 * 60_000) / 1000); // 11:10, ten minutes past the hour's end: settled
    await expectStatus(service.login('hourly', 'correct horse battery'), 200);
    const settled = await stats();
    assert.deepEqual(settled.rows, [
      { hour: tenOClock, succeeded: 2, refused: 1, throttled: 0 },
      { hour: '2026-03-01T11:00:00.000Z', succeeded: 1, refused: 0, throttled: 0 },
    ]);
    const kept = await keptHours();
    const weekStart = new Date(Date.parse('2026-03-01T11:00:00.000Z') - 167 * HOUR_MS).toISOString();
    assert.equal(
      kept.filter((row) => row.hour >= weekStart).length,
      167,
      'every settled hour of the week is kept, those without a login too',
    );
    assert.deepEqual(
      kept.filter((row) => Number(row.logins) > 0),
      [{ hour: tenOClock, logins: 3 }],
    );

    // The kept hour is what a request reads now: an event written into it afterwards (which no
    // request can do, its time being the clock's) does not change it.
    await service.execute(
      sql`update security_event set outcome = 'failed' where type = 'login' and occurred_at < '2026-03-01T11:00'`,
    );
    assert.deepEqual((await stats()).rows[0], { hour: tenOClock, succeeded: 2, refused: 1, throttled: 0 });
  });

  test('eight requests at once keep each hour once, with the same counts', async () => {
    clock.advance(3 * 3600); // three more hours settle
    const answers = await Promise.all(Array.from({ length: 8 }, () => stats()));
    for (const answer of answers) assert.deepEqual(answer, answers[0]);
    // Each kept the same settled hours: on PostgreSQL their inserts race, and without the insert's
    // ON CONFLICT all but one answered 500 (SQLite's one connection runs them one after another).
    const kept = await keptHours();
    const newest = new Date(clock.now().getTime() - 10 * 60_000);
    const lastSettled = new Date(newest.getTime() - (newest.getTime() % HOUR_MS) - HOUR_MS).toISOString();
    assert.equal(kept.at(-1)?.hour, lastSettled);
  });

  test('the retention worker keeps the settled hours counted before any request asks', async () => {
    clock.advance(2 * 3600);
    await expectStatus(service.login('hourly', 'correct horse battery'), 200);
    clock.advance(2 * 3600); // the hour of that login has settled; no request has read it
    const newest = new Date(clock.now().getTime() - 10 * 60_000);
    const lastSettled = new Date(newest.getTime() - (newest.getTime() % HOUR_MS) - HOUR_MS).toISOString();
    assert.notEqual((await keptHours()).at(-1)?.hour, lastSettled);
    const closeNode = await service.startAnotherNode({ retentionCheckEveryMs: 50 });
    try {
      await eventually(async () => (await keptHours()).at(-1)?.hour === lastSettled);
      const loginHour = (await keptHours()).filter((row) => Number(row.logins) > 0).at(-1);
      assert.equal(Number(loginHour?.logins), 1);
    } finally {
      await closeNode();
    }
  });

  test('the hours the chart no longer shows are deleted by the expired-rows clean-up', async () => {
    clock.advance(8 * 24 * 3600); // past the week of the chart, and past AUDIT_RETENTION_DAYS=2
    const weekStart = new Date(clock.now().getTime() - (clock.now().getTime() % HOUR_MS) - 167 * HOUR_MS).toISOString();
    assert.ok((await keptHours()).some((row) => row.hour < weekStart));
    // Another node starts with a short check: the hourly jobs are due for it, and it runs them.
    const closeNode = await service.startAnotherNode({ retentionCheckEveryMs: 50 });
    try {
      await eventually(async () => {
        const kept = await keptHours();
        return kept.length === 167 && kept.every((row) => row.hour >= weekStart);
      });
      assert.deepEqual((await stats()).rows, [], 'the logins are past the week, and past the retention');
    } finally {
      await closeNode();
    }
  });
});
