import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { eventually } from '../support/webhook-receiver.js';

const PASSWORD = 'correct horse battery';

// Each test has a service of its own: the per-address count would otherwise join them.
let service: Service;
beforeEach(async () => {
  service = await startService();
});
afterEach(() => service.close());

describe('login throttling', () => {
  test('after 5 wrong passwords for a username, the next attempt waits: 429 with Retry-After, even with the right password', async () => {
    await service.createUser('throttle-known', PASSWORD);
    for (let attempt = 0; attempt < 5; attempt++) {
      assert.equal((await expectStatus(service.login('throttle-known', 'wrong'), 400)).error, 'invalid_grant');
    }
    const throttled = await service.login('throttle-known', PASSWORD);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '2');
    assert.equal(throttled.headers.get('cache-control'), 'no-store');
    const body = (await throttled.json()) as Record<string, string>;
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
    assert.equal(body.error, 'login_throttled');
  });

  test('the real user is not locked out forever: after the wait the right password works and clears the count', async () => {
    await service.createUser('throttle-owner', PASSWORD);
    for (let attempt = 0; attempt < 5; attempt++) await expectStatus(service.login('throttle-owner', 'wrong'), 400);
    await expectStatus(service.login('throttle-owner', PASSWORD), 429);
    service.clock.advance(2);
    await expectStatus(service.login('throttle-owner', PASSWORD), 200);
    // The success cleared the count: 4 more failures leave the right password its turn.
    for (let attempt = 0; attempt < 4; attempt++) await expectStatus(service.login('throttle-owner', 'wrong'), 400);
    await expectStatus(service.login('throttle-owner', PASSWORD), 200);
  });

  test('waits double with each further failure and never exceed 15 minutes', async () => {
    await service.createUser('throttle-doubling', PASSWORD);
    const waits: number[] = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await service.login('throttle-doubling', 'wrong');
      if (response.status === 429) {
        const wait = Number(response.headers.get('retry-after'));
        waits.push(wait);
        service.clock.advance(wait);
      }
      await response.body?.cancel();
    }
    assert.ok(waits.length >= 3, `waits: ${waits}`);
    for (let index = 1; index < waits.length; index++) {
      const [previous, current] = [waits[index - 1] ?? 0, waits[index] ?? 0];
      assert.ok(current === 2 * previous || current === 900, `waits: ${waits}`);
    }
    assert.ok(waits.every((wait) => wait <= 900));
  });

  test('an unknown username is throttled exactly like a known one', async () => {
    await service.createUser('throttle-exists', PASSWORD);
    const answers: Record<string, { status: number; body: unknown; retryAfter: string | null }[]> = {};
    for (const name of ['throttle-exists', 'throttle-nobody']) {
      answers[name] = [];
      for (let attempt = 0; attempt < 8; attempt++) {
        const response = await service.login(name, 'wrong');
        answers[name]?.push({
          status: response.status,
          body: await response.json(),
          retryAfter: response.headers.get('retry-after'),
        });
      }
    }
    assert.deepEqual(answers['throttle-exists'], answers['throttle-nobody']);
    assert.equal(answers['throttle-nobody']?.at(-1)?.status, 429);
  });

  test('one address guessing across many usernames is throttled after 20 failures', async () => {
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 21; attempt++) {
      const response = await service.login(`spray-${attempt}`, 'wrong');
      statuses.push(response.status);
      await response.body?.cancel();
    }
    assert.deepEqual(statuses.slice(0, 20), Array(20).fill(400));
    assert.equal(statuses[20], 429);
  });

  test('usernames that differ only in case share one count', async () => {
    await service.createUser('Throttle-Case', PASSWORD);
    for (const name of ['throttle-case', 'THROTTLE-CASE', 'Throttle-Case', 'tHROTTLE-cASE', 'throttle-Case']) {
      await expectStatus(service.login(name, 'wrong'), 400);
    }
    assert.equal((await expectStatus(service.login('throttle-case', PASSWORD), 429)).error, 'login_throttled');
  });
});

describe('the throttle holds under concurrency (CONTRACT §13)', () => {
  /** Sends every login at once and returns the statuses, after checking each answer's shape. */
  async function all(logins: Promise<Response>[]) {
    const responses = await Promise.all(logins);
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<{ error?: string }>));
    for (const [index, response] of responses.entries()) {
      const expected = response.status === 429 ? 'login_throttled' : 'invalid_grant';
      assert.equal(bodies[index]?.error, expected, `answer ${index}: ${response.status}`);
      if (response.status === 429) assert.ok(Number(response.headers.get('retry-after')) >= 1);
    }
    return responses.map((response) => response.status);
  }

  test('of 50 simultaneous wrong passwords for one username, at most 5 are judged and the rest answer 429', async () => {
    await service.createUser('throttle-race', PASSWORD);
    const statuses = await all(Array.from({ length: 50 }, () => service.login('throttle-race', 'wrong')));
    // The refused ones waited for those being judged: exactly five were, none more.
    const judged = statuses.filter((status) => status === 400).length;
    assert.equal(judged, 5, `judged ${judged}: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 429).length, 50 - judged);
    // Nothing more gets through afterwards either, the right password included.
    await expectStatus(service.login('throttle-race', PASSWORD), 429);
  });

  test('of 50 simultaneous wrong passwords from one address for 50 usernames, at most 20 are judged', async () => {
    const statuses = await all(Array.from({ length: 50 }, (_, index) => service.login(`race-${index}`, 'wrong')));
    const judged = statuses.filter((status) => status === 400).length;
    assert.equal(judged, 20, `judged ${judged}: ${statuses}`);
  });

  test('100 simultaneous right passwords of 100 users from one address all succeed: logins in flight are not failures', async () => {
    const usernames = Array.from({ length: 100 }, (_, index) => `busy-${index}`);
    await Promise.all(usernames.map((username) => service.createUser(username, PASSWORD)));
    const responses = await Promise.all(usernames.map((username) => service.login(username, PASSWORD)));
    const answers = await Promise.all(
      responses.map(async (response) =>
        response.status === 200 ? 200 : `${response.status} ${((await response.json()) as { error?: string }).error}`,
      ),
    );
    assert.deepEqual(
      answers.filter((answer) => answer !== 200),
      [],
      `${answers.filter((answer) => answer === 200).length} of 100 succeeded`,
    );
    // And the address's count is back where it was: 20 wrong passwords are still judged after them.
    const wrong = await all(Array.from({ length: 21 }, (_, index) => service.login(`busy-${index}`, 'wrong')));
    assert.equal(wrong.filter((status) => status === 400).length, 20);
  });

  test('a right password gives its count back: 4 wrong, the right one, then 5 more are judged', async () => {
    await service.createUser('throttle-release', PASSWORD);
    for (let attempt = 0; attempt < 4; attempt++) await expectStatus(service.login('throttle-release', 'wrong'), 400);
    await expectStatus(service.login('throttle-release', PASSWORD), 200);
    for (let attempt = 0; attempt < 5; attempt++) await expectStatus(service.login('throttle-release', 'wrong'), 400);
    await expectStatus(service.login('throttle-release', 'wrong'), 429);
  });
});

describe('the audit trail of throttling', () => {
  test('a burst of throttled attempts writes one audit row per block, not one per request', async () => {
    await service.createUser('throttle-burst', PASSWORD);
    for (let attempt = 0; attempt < 5; attempt++) await expectStatus(service.login('throttle-burst', 'wrong'), 400);
    for (let attempt = 0; attempt < 100; attempt++) await expectStatus(service.login('throttle-burst', 'wrong'), 429);
    assert.equal(await throttledRows(service), 1);
    // The next block (after the wait, one more failure) is reported once more.
    service.clock.advance(2);
    await expectStatus(service.login('throttle-burst', 'wrong'), 400);
    for (let attempt = 0; attempt < 50; attempt++) await expectStatus(service.login('throttle-burst', 'wrong'), 429);
    assert.equal(await throttledRows(service), 2);
  });
});

describe('attempt counts are forgotten', () => {
  test('a scope whose last attempt is two days old loses its row, to the hourly clean-up; younger ones keep theirs', async () => {
    // A service of its own whose worker checks once at start and then not within the test: the
    // shared one's check, every minute of real time, could run the clean-up after the clock moved.
    const service = await startService({ retentionCheckEveryMs: 3_600_000 });
    try {
      const counts = async () => (await rowsOf(service, 'login_throttle')).length;
      await expectStatus(service.login('tried-first', 'wrong'), 400);
      assert.equal(await counts(), 2, 'the username and the address');
      service.clock.advance(86_400);
      await expectStatus(service.login('tried-next-day', 'wrong'), 400);
      assert.equal(await counts(), 3, 'a day-old count is kept');
      service.clock.advance(86_400 + 3600);
      await expectStatus(service.login('tried-last', 'wrong'), 400);
      assert.equal(await counts(), 4, 'a login deletes nothing (issue 33)');
      // Another node starts: its first check finds the hourly clean-up due by the clock and runs it.
      const stopNode = await service.startAnotherNode();
      try {
        // tried-first's count (2 days and an hour old) goes; tried-next-day's, tried-last's and the address's stay.
        await eventually(async () => (await counts()) === 3);
      } finally {
        await stopNode();
      }
      // As with a row kept past its window: tried-first starts again from a clean count, five free attempts.
      for (let attempt = 0; attempt < 5; attempt++) await expectStatus(service.login('tried-first', 'wrong'), 400);
      await expectStatus(service.login('tried-first', 'wrong'), 429);
    } finally {
      await service.close();
    }
  });
});

/** The rows of one table, read from the database. */
async function rowsOf(service: Service, table: string): Promise<Record<string, unknown>[]> {
  const line = (await service.dumpDatabase()).split('\n').find((candidate) => candidate.startsWith(`${table}: `));
  assert.ok(line, `the database has a ${table} table`);
  return JSON.parse(line.slice(table.length + 2));
}

async function throttledRows(service: Service) {
  const rows = await rowsOf(service, 'security_event');
  return rows.filter((row) => row.type === 'login' && row.outcome === 'throttled').length;
}

/** 20 wrong passwords for as many usernames, each sent with `forwardedFor` as X-Forwarded-For. */
async function spray(service: Service, forwardedFor: (attempt: number) => string) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const response = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      headers: { 'x-forwarded-for': forwardedFor(attempt) },
      body: { grant_type: 'password', username: `spray-${attempt}`, password: 'wrong' },
    });
    assert.equal(response.status, 400);
    await response.body?.cancel();
  }
}

function loginFrom(service: Service, forwardedFor: string) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    headers: { 'x-forwarded-for': forwardedFor },
    body: { grant_type: 'password', username: 'someone-else', password: PASSWORD },
  });
}

describe('client addresses behind a load balancer', () => {
  test('without TRUST_PROXY, X-Forwarded-For is ignored: a client cannot dodge the address limit by forging it', async () => {
    await spray(service, (attempt) => `198.51.100.${attempt + 1}`);
    assert.equal((await expectStatus(loginFrom(service, '198.51.100.200'), 429)).error, 'login_throttled');
  });

  test('with TRUST_PROXY naming the balancer, each client behind it has an address limit of its own', async () => {
    const behindBalancer = await startService({ env: { TRUST_PROXY: '127.0.0.1/32,::1' } });
    try {
      const userId = await behindBalancer.createUser('someone-else', PASSWORD);
      await spray(behindBalancer, () => '203.0.113.7');
      assert.equal((await expectStatus(loginFrom(behindBalancer, '203.0.113.7'), 429)).error, 'login_throttled');
      // Another client behind the same balancer is not held back by the first one's failures.
      await expectStatus(loginFrom(behindBalancer, '203.0.113.8'), 200);
      const events = await expectStatus(
        behindBalancer.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }),
        200,
      );
      assert.ok(
        JSON.stringify(events).includes('203.0.113.8'),
        'the audit trail records the client behind the balancer',
      );
    } finally {
      await behindBalancer.close();
    }
  });

  test('entries of X-Forwarded-For that are not addresses are skipped, never taken as the client', async () => {
    const behindBalancer = await startService({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      const userId = await behindBalancer.createUser('someone-else', PASSWORD);
      const cases: [string, string][] = [
        ['not-an-ip-1', '127.0.0.1'],
        ['1.2.3.4:5555', '127.0.0.1'],
        ['999.1.1.1', '127.0.0.1'],
        ['203.0.113.9, not-an-ip-1', '203.0.113.9'],
        ['203.0.113.10, 999.1.1.1, 1.2.3.4:5555', '203.0.113.10'],
      ];
      for (const [forwardedFor] of cases) {
        await expectStatus(loginFrom(behindBalancer, forwardedFor), 200);
        behindBalancer.clock.advance(1); // so that the events' order is the logins'
      }
      const events = await expectStatus(
        behindBalancer.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }),
        200,
      );
      const addresses = events.events.map((event: { client_address: string }) => event.client_address).reverse();
      assert.deepEqual(
        addresses,
        cases.map(([, address]) => address),
      );
    } finally {
      await behindBalancer.close();
    }
  });

  test('IPv6 clients are counted by their /64: rotating addresses inside it does not reset the limit', async () => {
    const behindBalancer = await startService({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      await behindBalancer.createUser('someone-else', PASSWORD);
      await spray(behindBalancer, (attempt) => `2001:db8:a:b::${(attempt + 1).toString(16)}`);
      await expectStatus(loginFrom(behindBalancer, '2001:db8:a:b:ffff:ffff:ffff:ffff'), 429);
      await expectStatus(loginFrom(behindBalancer, '2001:db8:a:c::1'), 200);
    } finally {
      await behindBalancer.close();
    }
  });
});
