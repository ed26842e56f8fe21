// The conditional updates every factor relies on, run on the pass's database with real
// concurrency (PostgreSQL's pool; SQLite serialises, which must give the same answers).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { spendBackupCode } from '../../src/store/backup-codes.js';
import type { Database } from '../../src/store/database.js';
import { advanceCounter, replacePendingFactor } from '../../src/store/mfa-factors.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { countAttempt, markUsed, replaceCode } from '../../src/store/one-time-codes.js';
import { claimDueJob } from '../../src/store/scheduled-jobs.js';
import { deleteSecurityEventsBefore, insertSecurityEvent } from '../../src/store/security-events.js';
import {
  type AttemptRule,
  deleteAttemptsBefore,
  noteRefusal,
  reserveAttempts,
  settleRightAttempt,
  settleWrongAttempt,
} from '../../src/store/throttle.js';
import { insertUser } from '../../src/store/users.js';
import { openTestDatabase } from '../support/database.js';

let db: Kysely<Database>;
let close: () => Promise<void>;
let userCount = 0;
const NOW = new Date('2026-11-23T12:00:00.000Z');
/** Attempts counted since then are in flight (AttemptLimiter takes 30 s). */
const IN_FLIGHT_SINCE = new Date(NOW.getTime() - 30_000);

before(async () => {
  ({ db, close } = await openTestDatabase());
  await migrateToLatest(db);
});
after(() => close());

async function newUser(): Promise<string> {
  const id = `user-${++userCount}`;
  await insertUser(db, { id, username: id, usernameKey: id, passwordHash: 'h' }, NOW);
  return id;
}

/** Counts one attempt in `scope` alone: true when it was let through. */
async function reserveAttempt(db: Kysely<Database>, scope: string, now: Date, rule: AttemptRule): Promise<boolean> {
  return (await reserveAttempts(db, [{ scope, rule }], now, IN_FLIGHT_SINCE)).length === 1;
}

/** Runs `work` 20 times at once. */
function twenty<T>(work: () => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: 20 }, work));
}

describe('spend once', () => {
  test('of 20 simultaneous markUsed on one code, exactly one wins', async () => {
    const userId = await newUser();
    await replaceCode(
      db,
      {
        id: 'code-1',
        userId,
        purpose: 'login',
        phoneNumber: '1',
        codeHash: 'x',
        expiresAt: new Date(NOW.getTime() + 300_000),
      },
      NOW,
    );
    const results = await twenty(() => markUsed(db, 'code-1', NOW));
    assert.equal(results.filter(Boolean).length, 1);
  });

  test('of 20 simultaneous spends of one backup code, exactly one wins', async () => {
    const userId = await newUser();
    await db
      .insertInto('backup_code')
      .values({ id: 'b-1', user_id: userId, code_hash: 'hash-1', used_at: null, created_at: NOW.toISOString() })
      .execute();
    const results = await twenty(() => spendBackupCode(db, userId, 'hash-1', NOW));
    assert.equal(results.filter(Boolean).length, 1);
  });
});

describe('count the attempt first', () => {
  test('of 20 simultaneous attempts at a code allowing 5, exactly 5 are counted, numbered 1 to 5', async () => {
    const userId = await newUser();
    await replaceCode(
      db,
      {
        id: 'code-2',
        userId,
        purpose: 'login',
        phoneNumber: '1',
        codeHash: 'x',
        expiresAt: new Date(NOW.getTime() + 300_000),
      },
      NOW,
    );
    const results = await twenty(() => countAttempt(db, 'code-2', 5));
    assert.deepEqual(results.filter((attempt) => attempt !== undefined).sort(), [1, 2, 3, 4, 5]);
  });

  test('of 50 simultaneous reservations in a scope allowing 5, exactly 5 get through', async () => {
    const rule = {
      free: 5,
      windowStart: new Date(NOW.getTime() - 900_000),
      blockEnds: [new Date(NOW.getTime() + 2000)],
    };
    const results = await Promise.all(Array.from({ length: 50 }, () => reserveAttempt(db, 'scope-race', NOW, rule)));
    assert.equal(results.filter(Boolean).length, 5);
  });
});

describe('the block each count earns', () => {
  test('none below the free attempts, then each wait in turn, the last repeating; an attempt given back counts as never made', async () => {
    const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
    // Two free attempts, then waits of 2, 4 and 8 s, as AttemptLimiter works them out for `now`.
    const ruleAt = (now: Date) => ({
      free: 2,
      windowStart: new Date(now.getTime() - 900_000),
      blockEnds: [2, 4, 8].map((wait) => new Date(now.getTime() + wait * 1000)),
    });
    const row = () =>
      db
        .selectFrom('login_throttle')
        .select(['failures', 'blocked_until'])
        .where('scope', '=', 'scope-blocks')
        .executeTakeFirst();
    const reserve = (seconds: number) => reserveAttempt(db, 'scope-blocks', at(seconds), ruleAt(at(seconds)));

    assert.equal(await reserve(0), true);
    assert.deepEqual(await row(), { failures: 1, blocked_until: null });
    await settleRightAttempt(
      db,
      NOW,
      IN_FLIGHT_SINCE,
      { scope: 'scope-unrelated', free: 2 },
      { scope: 'scope-blocks', free: 2 },
    );
    assert.equal(await reserve(0), true);
    assert.deepEqual(await row(), { failures: 1, blocked_until: null });
    assert.equal(await reserve(0), true);
    assert.deepEqual(await row(), { failures: 2, blocked_until: at(2).toISOString() });
    assert.equal(await reserve(1), false);
    assert.equal(await reserve(2), true);
    assert.deepEqual(await row(), { failures: 3, blocked_until: at(2 + 4).toISOString() });
    assert.equal(await reserve(6), true);
    assert.deepEqual(await row(), { failures: 4, blocked_until: at(6 + 8).toISOString() });
    assert.equal(await reserve(14), true);
    assert.deepEqual(await row(), { failures: 5, blocked_until: at(14 + 8).toISOString() });
  });
});

describe('several scopes in one statement', () => {
  const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
  const row = (scope: string) =>
    db.selectFrom('login_throttle').select(['failures', 'blocked_until']).where('scope', '=', scope).executeTakeFirst();

  test('each scope is counted by its own rule, and one that must wait is left as it was', async () => {
    const strict = { free: 1, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [at(60)] };
    const lenient = { free: 3, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [at(5)] };
    const both = () =>
      reserveAttempts(
        db,
        [
          { scope: 'multi-strict', rule: strict },
          { scope: 'multi-lenient', rule: lenient },
        ],
        NOW,
        IN_FLIGHT_SINCE,
      );
    assert.deepEqual((await both()).sort(), ['multi-lenient', 'multi-strict']);
    assert.deepEqual(await row('multi-strict'), { failures: 1, blocked_until: at(60).toISOString() });
    assert.deepEqual(await row('multi-lenient'), { failures: 1, blocked_until: null });
    assert.deepEqual(await both(), ['multi-lenient'], 'the strict scope waits; the lenient one still counts');
    assert.deepEqual(await row('multi-strict'), { failures: 1, blocked_until: at(60).toISOString() });
    assert.deepEqual(await row('multi-lenient'), { failures: 2, blocked_until: null });
  });

  test('no scopes: nothing is counted and nothing fails', async () => {
    assert.deepEqual(await reserveAttempts(db, [], NOW, IN_FLIGHT_SINCE), []);
  });

  test('a right attempt forgets one scope, down to a count that behaves as no row, and gives one attempt back to the other', async () => {
    const ruleAt = (now: Date) => ({ free: 3, windowStart: new Date(now.getTime() - 900_000), blockEnds: [at(2)] });
    const forget = { scope: 'settle-forget', free: 3 };
    const back = { scope: 'settle-back', free: 3 };
    for (let attempt = 0; attempt < 2; attempt++) {
      assert.equal(await reserveAttempt(db, forget.scope, NOW, ruleAt(NOW)), true);
      assert.equal(await reserveAttempt(db, back.scope, NOW, ruleAt(NOW)), true);
      await settleWrongAttempt(db, [forget.scope, back.scope]);
    }
    // The third attempt, in flight, reaches the block.
    assert.equal(await reserveAttempt(db, forget.scope, NOW, ruleAt(NOW)), true);
    assert.equal(await reserveAttempt(db, back.scope, NOW, ruleAt(NOW)), true);
    assert.equal(await reserveAttempt(db, forget.scope, at(1), ruleAt(at(1))), false, 'blocked before settling');

    await settleRightAttempt(db, at(1), IN_FLIGHT_SINCE, forget, back);
    assert.deepEqual(await row(forget.scope), { failures: 0, blocked_until: null });
    assert.deepEqual(
      await row(back.scope),
      { failures: 2, blocked_until: null },
      'the block was earned by the attempt in flight, which was right',
    );
    // From zero, as from no row: the free attempts again, then the block.
    assert.equal(await reserveAttempt(db, forget.scope, at(1), ruleAt(at(1))), true);
    assert.deepEqual(await row(forget.scope), { failures: 1, blocked_until: null });

    // A count never goes below zero, however many right attempts are settled.
    for (let settle = 0; settle < 4; settle++) await settleRightAttempt(db, at(1), IN_FLIGHT_SINCE, forget, back);
    assert.deepEqual(await row(back.scope), { failures: 0, blocked_until: null });
  });

  test('a block earned by failures stays when a right attempt gives one back', async () => {
    const rule = { free: 2, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [at(60)] };
    const scope = { scope: 'settle-earned', free: 2 };
    for (let attempt = 0; attempt < 3; attempt++) {
      assert.equal(
        await reserveAttempt(db, scope.scope, at(attempt * 60), { ...rule, blockEnds: [at(attempt * 60 + 60)] }),
        true,
      );
      await settleWrongAttempt(db, [scope.scope]);
    }
    assert.equal(await reserveAttempt(db, scope.scope, at(180), { ...rule, blockEnds: [at(240)] }), true);
    await settleRightAttempt(db, at(180), IN_FLIGHT_SINCE, { scope: 'settle-earned-user', free: 5 }, scope);
    assert.deepEqual(await row(scope.scope), { failures: 3, blocked_until: at(240).toISOString() });
  });

  test('a refusal while attempts are in flight is told as busy; one by failures alone as a block, noted once', async () => {
    const rule = { free: 1, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [at(30)] };
    assert.equal(await reserveAttempt(db, 'busy-scope', NOW, rule), true);
    assert.equal(await reserveAttempt(db, 'busy-scope', NOW, rule), false);
    assert.deepEqual(await noteRefusal(db, 'busy-scope', NOW, IN_FLIGHT_SINCE), { isBusy: true });
    await settleWrongAttempt(db, ['busy-scope']);
    assert.deepEqual(await noteRefusal(db, 'busy-scope', NOW, IN_FLIGHT_SINCE), {
      isBusy: false,
      blockedUntil: at(30),
      isFirstRefusal: true,
    });
    assert.equal((await noteRefusal(db, 'busy-scope', NOW, IN_FLIGHT_SINCE))?.isBusy, false);
    assert.deepEqual(await noteRefusal(db, 'busy-scope', NOW, IN_FLIGHT_SINCE), {
      isBusy: false,
      blockedUntil: at(30),
      isFirstRefusal: false,
    });
  });

  test('attempts in flight for longer than the window are taken for abandoned: counted as failures, not waited for', async () => {
    const rule = { free: 1, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [at(30)] };
    assert.equal(await reserveAttempt(db, 'abandoned-scope', NOW, rule), true);
    const later = at(31);
    assert.deepEqual(await noteRefusal(db, 'abandoned-scope', later, new Date(later.getTime() - 30_000)), undefined);
    const counted = await reserveAttempts(
      db,
      [{ scope: 'abandoned-scope', rule: { ...rule, blockEnds: [at(61)] } }],
      later,
      new Date(later.getTime() - 30_000),
    );
    assert.deepEqual(counted, ['abandoned-scope']);
    const inFlight = await db
      .selectFrom('login_throttle')
      .select(['failures', 'in_flight'])
      .where('scope', '=', 'abandoned-scope')
      .executeTakeFirst();
    // The abandoned one stays a failure; only the new one is in flight.
    assert.deepEqual(inFlight, { failures: 2, in_flight: 1 });
  });
});

describe('the prune beside reservations', () => {
  // On PostgreSQL, a prune that waited for the rows reservations hold deadlocked in every run.
  test('deleting every row as stale while 10 workers reserve pairs of scopes: no deadlock, every attempt counted', async () => {
    const rule = { free: 1000, windowStart: new Date(NOW.getTime() - 900_000), blockEnds: [NOW] };
    const everyRowStale = new Date(NOW.getTime() + 86_400_000);
    let reserving = true;
    const pruner = (async () => {
      do await deleteAttemptsBefore(db, everyRowStale, 1000);
      while (reserving);
    })();
    const workers = Array.from({ length: 10 }, async (_, worker) => {
      for (let round = 0; round < 40; round++) {
        // A user and an address, as a login counts them; each is shared with other workers.
        const pair = [`prune-address-${(worker * 3 + round) % 5}`, `prune-user-${(worker + round) % 4}`];
        const rules = pair.map((scope) => ({ scope, rule }));
        const counted = await db.transaction().execute((tx) => reserveAttempts(tx, rules, NOW, IN_FLIGHT_SINCE));
        assert.deepEqual(counted.sort(), pair);
      }
    });
    await Promise.all(workers).finally(() => {
      reserving = false;
    });
    await pruner;
  });
});

describe('one pending enrolment per user and type', () => {
  test('of 20 simultaneous enrolments started, one stays pending', async () => {
    const userId = await newUser();
    let started = 0;
    await twenty(() =>
      replacePendingFactor(db, {
        id: `p-${++started}`,
        userId,
        type: 'totp',
        name: 'app',
        createdAt: NOW,
        sealedSecret: 's',
      }),
    );
    const pending = await db.selectFrom('mfa_factor').select('id').where('user_id', '=', userId).execute();
    assert.equal(pending.length, 1);
  });
});

describe('accept a step only once', () => {
  test('of 20 simultaneous advances to one step, exactly one wins; that step and earlier ones never again', async () => {
    const userId = await newUser();
    await replacePendingFactor(db, { id: 'f-1', userId, type: 'totp', name: 'app', createdAt: NOW, sealedSecret: 's' });
    const results = await twenty(() => advanceCounter(db, 'f-1', 1000));
    assert.equal(results.filter(Boolean).length, 1);
    assert.equal(await advanceCounter(db, 'f-1', 1000), false);
    assert.equal(await advanceCounter(db, 'f-1', 999), false);
    assert.equal(await advanceCounter(db, 'f-1', 1001), true);
  });
});

describe('a periodic job, once among the nodes', () => {
  test('of 20 simultaneous claims of a job never run, one wins; none before it is due again, then one', async () => {
    const inAnHour = new Date(NOW.getTime() + 3_600_000);
    const first = await twenty(() => claimDueJob(db, 'job-1', NOW, inAnHour));
    assert.equal(first.filter(Boolean).length, 1);
    assert.equal(await claimDueJob(db, 'job-1', new Date(inAnHour.getTime() - 1), inAnHour), false);
    const later = await twenty(() => claimDueJob(db, 'job-1', inAnHour, new Date(inAnHour.getTime() + 3_600_000)));
    assert.equal(later.filter(Boolean).length, 1);
  });
});

describe('the retention deletes', () => {
  test('take at most the batch, oldest first, and only what is past the cutoff; two at once take different rows', async () => {
    const at = (minutes: number) => new Date(NOW.getTime() + minutes * 60_000);
    for (let minute = 0; minute < 30; minute += 1) {
      await insertSecurityEvent(db, { id: `old-${minute}`, occurredAt: at(minute), type: 'login', outcome: 'success' });
    }
    await insertSecurityEvent(db, { id: 'kept', occurredAt: at(60), type: 'login', outcome: 'success' });
    const cutoff = at(45);
    assert.equal(await deleteSecurityEventsBefore(db, cutoff, 4), 4);
    const left = await db.selectFrom('security_event').select('id').where('id', 'like', 'old-%').execute();
    assert.deepEqual(left.map((row) => row.id).sort(), Array.from({ length: 26 }, (_, i) => `old-${i + 4}`).sort());
    // Ten batches of 5 at once for the 26 left: each row deleted once, 26 in all.
    const counts = await Promise.all(Array.from({ length: 10 }, () => deleteSecurityEventsBefore(db, cutoff, 5)));
    const more = await deleteSecurityEventsBefore(db, cutoff, 5);
    assert.equal(counts.reduce((sum, count) => sum + count, 0) + more, 26);
    const rest = await db
      .selectFrom('security_event')
      .select('id')
      .where('occurred_at', '>=', NOW.toISOString())
      .execute();
    assert.deepEqual(
      rest.map((row) => row.id),
      ['kept'],
    );
  });
});
