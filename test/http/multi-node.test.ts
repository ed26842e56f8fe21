import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { type ServiceProcess, startServiceProcess } from '../support/node-process.js';
import { createTestSchema, onPostgres } from '../support/postgres.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, startService } from '../support/service.js';
import { eventually, startWebhookReceiver, verifyWebhook } from '../support/webhook-receiver.js';

// Several stateless nodes on one PostgreSQL database: only the PostgreSQL pass runs this file.
const PASSWORD = 'correct horse battery';

describe('two nodes on one PostgreSQL database', { skip: !onPostgres && 'runs in the PostgreSQL pass' }, () => {
  let twilio: Awaited<ReturnType<typeof startFakeTwilio>>;
  let schema: Awaited<ReturnType<typeof createTestSchema>>;
  let nodes: ServiceProcess[] = [];

  before(async () => {
    twilio = await startFakeTwilio();
    schema = await createTestSchema();
    const env = {
      DATABASE_URL: schema.databaseUrl,
      ADMIN_TOKEN,
      ISSUER: 'http://mfa.test',
      SECRET_KEY: 'a shared secret key of at least 32 characters',
      SMS_PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000002',
      TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-tests',
      TWILIO_FROM: '+15005550006',
      TWILIO_API_URL: twilio.url,
      SMS_NUMBER_HOURLY_LIMIT: '2',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // The busy-address tests name their client in X-Forwarded-For, each an address of its own.
      TRUST_PROXY: '127.0.0.1/32,::1',
      // What these tests judge is the database settling races, not a pool starved by a loaded CI
      // machine (which answers 503, as test/http/database-outage.test.ts shows): wait longer.
      DATABASE_CONNECT_TIMEOUT_MS: '30000',
    };
    // Started at the same moment on an empty schema: both migrate, exactly once between them.
    nodes = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await twilio.close();
    await schema.drop();
  });

  /** fetch on node `index % 2`, JSON body. */
  function call(index: number, path: string, init: { method?: string; token?: string; body?: unknown } = {}) {
    const node = nodes[index % 2];
    if (!node) throw new Error('no node');
    const headers: Record<string, string> = {};
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    return fetch(node.url + path, { method: init.method ?? 'GET', headers, body });
  }

  function login(index: number, username: string, extra: Record<string, string> = {}) {
    return call(index, '/mfa/oauth2/token/', {
      method: 'POST',
      body: { grant_type: 'password', username, password: PASSWORD, ...extra },
    });
  }

  let userCount = 0;
  async function createUser(index: number) {
    const username = `node-user-${++userCount}`;
    await expectStatus(
      call(index, '/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username, password: PASSWORD } }),
      201,
    );
    return username;
  }

  /** A user with MFA on, enrolled through node 0 and verified through node 1. */
  async function createMfaUser() {
    const username = await createUser(0);
    const phone = nextPhone();
    const { access_token: token } = await expectStatus(login(0, username), 200);
    await expectStatus(call(0, '/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }), 200);
    const code = twilio.lastCodeFor(`+${phone}`);
    const enabled = await expectStatus(
      call(1, '/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } }),
      200,
    );
    assert.equal(enabled.enabled, true, 'a code sent through node 0 is accepted by node 1');
    return { username, e164: `+${phone}` };
  }

  test('the migrations ran exactly once although both nodes started together', async () => {
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: schema.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query('select name, count(*)::int as runs from kysely_migration group by name');
      assert.ok(rows.length > 0);
      assert.ok(rows.every((row) => row.runs === 1));
    } finally {
      await client.end();
    }
  });

  test('both nodes serve the same JWKS and accept each other’s tokens', async () => {
    const [first, second] = await Promise.all(
      [0, 1].map((index) => expectStatus(call(index, '/.well-known/jwks.json'), 200)),
    );
    assert.deepEqual(first, second);
    assert.deepEqual(
      first.keys.map((key: { alg: string }) => key.alg).sort(),
      ['ES256', 'EdDSA', 'RS256'],
      'nodes starting together settle on one signing key per algorithm',
    );
    const username = await createUser(1);
    const { access_token: fromSecond } = await expectStatus(login(1, username), 200);
    const { access_token: fromFirst } = await expectStatus(login(0, username), 200);
    await expectStatus(call(0, '/mfa/', { token: fromSecond }), 200);
    await expectStatus(call(1, '/mfa/', { token: fromFirst }), 200);
  });

  test('a login code sent through one node logs in through the other', async () => {
    const { username, e164 } = await createMfaUser();
    assert.deepEqual(await expectStatus(login(0, username), 200), { mfa_required: true, mfa_type: 'sms' });
    const tokens = await expectStatus(login(1, username, { mfa_code: twilio.lastCodeFor(e164) }), 200);
    assert.equal(typeof tokens.access_token, 'string');
  });

  test('of 20 simultaneous uses of one code spread over both nodes, exactly one succeeds', async () => {
    const { username, e164 } = await createMfaUser();
    await expectStatus(login(1, username), 200);
    const code = twilio.lastCodeFor(e164);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) => login(index, username, { mfa_code: code })),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses}`);
    // Attempts are counted before they are judged: past the allowance, 429 without judging.
    assert.ok(
      statuses.every((status) => status === 200 || status === 400 || status === 429),
      `statuses: ${statuses}`,
    );
  });

  test('of 20 simultaneous logins with one authenticator code spread over both nodes, exactly one succeeds', async () => {
    const username = await createUser(0);
    const { access_token: token } = await expectStatus(login(0, username), 200);
    const start = await expectStatus(call(0, '/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri);
    // Verified with the previous step's code, so that the login's code is a step never used.
    const previousStep = app.generate({ timestamp: Date.now() - 30_000 });
    await expectStatus(call(1, '/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: previousStep } }), 200);
    const code = app.generate();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) => login(index, username, { mfa_code: code })),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses}`);
    assert.ok(
      statuses.every((status) => [200, 400, 429].includes(status)),
      `statuses: ${statuses}`,
    );
  });

  test('of 50 simultaneous wrong passwords for one username spread over both nodes, at most 5 are judged', async () => {
    const username = await createUser(0);
    const started = performance.now();
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        call(index, '/mfa/oauth2/token/', {
          method: 'POST',
          body: { grant_type: 'password', username, password: 'not the password' },
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    const failures = nodes.flatMap((node) =>
      node
        .output()
        .split('\n')
        .filter((line) => line.includes('"level":50')),
    );
    const judged = statuses.filter((status) => status === 400).length;
    // Five free attempts, then waits of 2, 4, 8 … s (login-throttle.ts): a batch slowed past them
    // (a loaded machine) rightly lets one more through after each wait.
    const seconds = (performance.now() - started) / 1000;
    const afterWaits = Math.floor(Math.log2(seconds / 2 + 1));
    assert.ok(judged >= 1 && judged <= 5 + afterWaits, `statuses: ${statuses} in ${seconds.toFixed(1)} s`);
    assert.equal(
      statuses.filter((status) => status === 429).length,
      50 - judged,
      `statuses: ${statuses}; errors logged: ${failures.slice(0, 3).join('\n')}`,
    );
  });

  test('of 20 simultaneous wrong codes spread over both nodes, at most 5 are judged (one guess budget)', async () => {
    const { username, e164 } = await createMfaUser();
    await expectStatus(login(1, username), 200);
    const code = twilio.lastCodeFor(e164);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) => login(index, username, { mfa_code: wrong })),
    );
    const statuses = responses.map((response) => response.status);
    const judged = statuses.filter((status) => status === 400).length;
    assert.ok(judged >= 1 && judged <= 5, `statuses: ${statuses}`);
    assert.ok(
      statuses.every((status) => status === 400 || status === 429),
      `statuses: ${statuses}`,
    );
  });

  test('refresh-token reuse on one node is caught on the other, and revokes the login everywhere', async () => {
    const username = await createUser(0);
    const first = await expectStatus(login(0, username), 200);
    const refresh = (index: number, token: string) =>
      call(index, '/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: token },
      });
    const second = await expectStatus(refresh(0, first.refresh_token), 200);
    assert.equal((await expectStatus(refresh(1, first.refresh_token), 400)).error, 'invalid_grant');
    assert.equal((await expectStatus(refresh(0, second.refresh_token), 400)).error, 'invalid_grant');
    await expectStatus(call(0, '/mfa/', { token: second.access_token }), 401);
    await expectStatus(call(1, '/mfa/', { token: second.access_token }), 401);
  });

  test('the resend cooldown is shared: a login on the other node inside it sends no SMS', async () => {
    const { username, e164 } = await createMfaUser();
    await expectStatus(login(0, username), 200);
    const sent = twilio.messages.filter((message) => message.to === e164).length;
    assert.deepEqual(await expectStatus(login(1, username), 200), { mfa_required: true, mfa_type: 'sms' });
    assert.equal(twilio.messages.filter((message) => message.to === e164).length, sent);
  });

  test('the hourly cap per number is shared: a third enrolment of one number through either node is refused', async () => {
    const phone = nextPhone();
    const answers = [];
    for (let index = 0; index < 3; index++) {
      const username = await createUser(index);
      const { access_token: token } = await expectStatus(login(index, username), 200);
      answers.push(await call(index, '/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }));
    }
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 429],
    );
    const [, , refused] = answers;
    assert.ok(refused);
    assert.equal(((await refused.json()) as { error: string }).error, 'sms_rate_limited');
  });

  test('another deployment in another schema of the same database migrates and keeps its own data', async () => {
    const username = await createUser(0);
    // Kysely would find this deployment's migration tables in the other schema and skip creating its own.
    const other = await startService();
    try {
      const created = await expectStatus(
        other.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username, password: PASSWORD } }),
        201,
      );
      assert.equal(created.username, username);
      await expectStatus(other.call('/readyz'), 200);
    } finally {
      await other.close();
    }
  });

  test('each webhook delivery attempt is made by one node: 12 events failing once arrive exactly twice each', {
    timeout: 120_000,
  }, async () => {
    const receiver = await startWebhookReceiver();
    try {
      // Every event fails its first attempt: both nodes poll for the retries.
      const firstSeen = new Set<string>();
      receiver.answerWith((webhook) => {
        const id = webhook.headers['webhook-id'] ?? '';
        if (firstSeen.has(id)) return 204;
        firstSeen.add(id);
        return 500;
      });
      const endpoint = await expectStatus(
        call(0, '/admin/webhooks', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { url: `${receiver.url}/nodes`, events: ['mfa.reset_by_operator'] },
        }),
        201,
      );
      for (let index = 0; index < 12; index++) {
        const username = await createUser(index);
        const user = await expectStatus(call(index, `/admin/users?username=${username}`, { token: ADMIN_TOKEN }), 200);
        await expectStatus(call(index, `/admin/users/${user.id}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      }
      const webhooks = await receiver.waitFor('/nodes', 24, 60_000);
      const perId = new Map<string, number>();
      for (const webhook of webhooks) {
        const id = webhook.headers['webhook-id'] ?? '';
        perId.set(id, (perId.get(id) ?? 0) + 1);
        assert.equal(verifyWebhook(endpoint.secret, webhook).type, 'mfa.reset_by_operator');
      }
      assert.equal(perId.size, 12);
      assert.deepEqual(new Set(perId.values()), new Set([2]), 'each event: one failed attempt, one success');
      // The receiver has its answer before the node records it: read once every attempt is recorded.
      let deliveries: { event_id: string; attempt: number; status: string }[] = [];
      await eventually(async () => {
        ({ deliveries } = await expectStatus(
          call(1, `/admin/webhooks/${endpoint.id}/deliveries`, { token: ADMIN_TOKEN }),
          200,
        ));
        return deliveries.length === 24 && deliveries.every((line) => line.status !== 'pending');
      });
      assert.equal(deliveries.length, 24);
      for (const id of perId.keys()) {
        const lines = deliveries.filter((line: { event_id: string }) => line.event_id === id);
        assert.deepEqual(
          lines.map((line: { attempt: number; status: string }) => [line.attempt, line.status]),
          [
            [2, 'succeeded'],
            [1, 'failed'],
          ],
        );
      }
      // Nothing more comes: no attempt was made twice.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(receiver.at('/nodes').length, 24);
    } finally {
      await receiver.close();
    }
  });

  /** The password grant on node `index % 2`, for a client at `address` behind the trusted proxy. */
  function loginFrom(index: number, address: string, username: string, password: string) {
    const node = nodes[index % 2];
    if (!node) throw new Error('no node');
    return fetch(`${node.url}/mfa/oauth2/token/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify({ grant_type: 'password', username, password }),
    });
  }

  test('100 simultaneous right passwords of 100 users from one address, spread over both nodes, all succeed', async () => {
    const usernames: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      usernames.push(...(await Promise.all(Array.from({ length: 10 }, (_, index) => createUser(index)))));
    }
    const responses = await Promise.all(
      usernames.map((username, index) => loginFrom(index, '203.0.113.50', username, PASSWORD)),
    );
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
  });

  test('of 50 simultaneous wrong passwords for 50 usernames from one address, spread over both nodes, 20 are judged', async () => {
    const started = performance.now();
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) => loginFrom(index, '203.0.113.51', `nobody-${index}`, 'not the password')),
    );
    const bodies = await Promise.all(responses.map((response) => response.json() as Promise<{ error?: string }>));
    const statuses = responses.map((response) => response.status);
    const judged = statuses.filter((status) => status === 400).length;
    // Twenty free attempts, then waits of 2, 4, 8 … s: a batch slowed past them (a loaded machine)
    // rightly lets one more through after each wait.
    const seconds = (performance.now() - started) / 1000;
    const afterWaits = Math.floor(Math.log2(seconds / 2 + 1));
    assert.ok(judged >= 20 && judged <= 20 + afterWaits, `statuses: ${statuses} in ${seconds.toFixed(1)} s`);
    for (const [index, body] of bodies.entries()) {
      assert.equal(body.error, statuses[index] === 400 ? 'invalid_grant' : 'login_throttled', `answer ${index}`);
    }
  });

  test('both nodes stop cleanly on SIGTERM', async () => {
    const codes = await Promise.all(nodes.map((node) => node.stop('SIGTERM')));
    assert.deepEqual(codes, [0, 0]);
  });
});
