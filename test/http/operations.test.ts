import assert from 'node:assert/strict';
import { channel } from 'node:diagnostics_channel';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { compileErrors, validate } from '@readme/openapi-parser';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { decodeJwt } from 'jose';
import { type Kysely, sql } from 'kysely';
import * as OTPAuth from 'otpauth';
import { openDatabase } from '../../src/store/database.js';
import { migrations } from '../../src/store/migrations/index.js';
import { createTestSchema, onPostgres, POSTGRES_URL } from '../support/postgres.js';
import {
  ADMIN_TOKEN,
  expectStatus,
  nextPhone,
  type Service,
  type ServiceOptions,
  startService,
} from '../support/service.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const PASSWORD = 'correct horse battery';
const METRICS_TOKEN = 'metrics-scrape-token-0123456789';
/** A possible GB mobile number: outside SMS_ALLOWED_COUNTRIES=US below. */
const GB_PHONE = '447400123456';

interface RegisteredRoute {
  method: string;
  url: string;
  hasBody: boolean;
  isGuarded: boolean;
  isHidden: boolean;
}

/**
 * Starts a service and records every route it registers, through Fastify's own `onRoute` hook:
 * Fastify publishes each new instance on the `fastify.initialization` diagnostics channel before
 * any plugin or route is added, so the hook sees them all, including those in encapsulated plugins.
 */
async function startServiceRecordingRoutes(options?: ServiceOptions) {
  const routes: RegisteredRoute[] = [];
  const initialization = channel('fastify.initialization');
  const onInstance = (message: unknown) => {
    const { fastify } = message as { fastify: FastifyInstance };
    fastify.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) {
        routes.push({
          method,
          url: route.url,
          hasBody: route.schema?.body !== undefined,
          isGuarded: route.onRequest !== undefined || route.preHandler !== undefined,
          isHidden: route.schema?.hide === true,
        });
      }
    });
  };
  initialization.subscribe(onInstance);
  try {
    return { service: await startService(options), routes };
  } finally {
    initialization.unsubscribe(onInstance);
  }
}

let service: Service;
let routes: RegisteredRoute[];
before(async () => {
  ({ service, routes } = await startServiceRecordingRoutes());
});
after(() => service.close());

async function json(pending: Promise<Response>) {
  const response = await pending;
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

describe('health and readiness', () => {
  test('GET /healthz answers 200 without any token', async () => {
    const { status, body } = await json(service.call('/healthz'));
    assert.equal(status, 200);
    assert.deepEqual(body, { status: 'ok' });
  });

  test('GET /readyz answers 200 without any token when the database is reachable and migrated', async () => {
    const { status, body } = await json(service.call('/readyz'));
    assert.equal(status, 200);
    assert.deepEqual(body, { status: 'ready' });
  });

  test('GET /readyz answers 503 with an error body while a migration is missing, and 200 once it is back', async () => {
    const broken = await startService();
    const { db } = await openDatabase(broken.config.databaseUrl);
    const kysely = db as unknown as Kysely<any>;
    try {
      const lastMigration = Object.keys(migrations).sort().at(-1);
      const row = await kysely
        .selectFrom('kysely_migration')
        .selectAll()
        .where('name', '=', lastMigration)
        .executeTakeFirstOrThrow();
      await kysely.deleteFrom('kysely_migration').where('name', '=', lastMigration).execute();

      const notReady = await json(broken.call('/readyz'));
      assert.equal(notReady.status, 503);
      assert.deepEqual(Object.keys(notReady.body).sort(), ['error', 'error_description']);
      assert.equal(notReady.body.error, 'not_ready');
      assert.match(notReady.body.error_description, /migrat/);
      assert.match(notReady.headers.get('content-type') ?? '', /^application\/json/);
      // Liveness is about the process: a restart would not migrate the database.
      assert.equal((await broken.call('/healthz')).status, 200);

      await kysely.insertInto('kysely_migration').values(row).execute();
      assert.deepEqual((await json(broken.call('/readyz'))).body, { status: 'ready' });
    } finally {
      await db.destroy();
      await broken.close();
    }
  });

  test('GET /readyz answers 503 on a database whose migrations never ran', async () => {
    const broken = await startService();
    const { db } = await openDatabase(broken.config.databaseUrl);
    try {
      await sql`drop table kysely_migration`.execute(db);
      const notReady = await json(broken.call('/readyz'));
      assert.equal(notReady.status, 503);
      assert.equal(notReady.body.error, 'not_ready');
      assert.equal(typeof notReady.body.error_description, 'string');
    } finally {
      await db.destroy();
      await broken.close();
    }
  });

  test('GET /readyz answers 503 while PostgreSQL is unreachable, without its address, and 200 once it is back', {
    skip: !onPostgres && 'an unreachable server is PostgreSQL’s case: runs in the PostgreSQL pass',
  }, async () => {
    const server = new URL(POSTGRES_URL);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const schema = await createTestSchema();
    const viaProxy = new URL(schema.databaseUrl);
    viaProxy.port = String(proxy.port);
    const cut = await startService({
      env: { DATABASE_URL: viaProxy.toString(), DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    });
    try {
      assert.equal((await cut.call('/readyz')).status, 200);
      await proxy.cut();
      const notReady = await json(cut.call('/readyz'));
      assert.equal(notReady.status, 503);
      assert.equal(notReady.body.error, 'not_ready');
      assert.equal(typeof notReady.body.error_description, 'string');
      // An unauthenticated endpoint: the driver's message (host, port, user) goes to the log only.
      assert.doesNotMatch(notReady.body.error_description, new RegExp(`${proxy.port}|127\\.0\\.0\\.1|ECONN`));
      assert.equal((await cut.call('/healthz')).status, 200);

      await proxy.restore();
      let status = 0;
      for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
        status = (await cut.call('/readyz')).status;
        if (status !== 200) await sleep(100);
      }
      assert.equal(status, 200, 'ready again without a restart');
    } finally {
      await cut.close();
      await proxy.cut();
      await schema.drop();
    }
  });
});

/** One sample of the Prometheus text format: `name{label="value",…} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format, failing on any line that is not in it. */
function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  const described = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (comment) {
      described.set(comment[2] ?? '', [...(described.get(comment[2] ?? '') ?? []), comment[1] ?? '']);
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[+-]Inf|NaN)$/.exec(line);
    assert.ok(match, `not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = match[2] ?? '';
    const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;
    let consumed = 0;
    for (const label of labelText.matchAll(labelPattern)) {
      labels[label[1] ?? ''] = (label[2] ?? '').replace(/\\(.)/g, (_all, escaped: string) =>
        escaped === 'n' ? '\n' : escaped,
      );
      consumed += label[0].length;
    }
    assert.equal(consumed, labelText.length, `malformed labels: ${line}`);
    const name = match[1] ?? '';
    const family = name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(described.has(name) || described.has(family), `no HELP/TYPE before ${name}`);
    samples.push({ name, labels, value: Number(match[3]) });
  }
  for (const [family, kinds] of described) assert.deepEqual(kinds, ['HELP', 'TYPE'], family);
  return samples;
}

/** The value of the sample with exactly these labels, or 0 when there is none (a counter never touched). */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = samples.filter(
    (sample) => sample.name === name && JSON.stringify(Object.entries(sample.labels).sort()) === wanted,
  );
  assert.ok(found.length <= 1, `${name} ${wanted} appears twice`);
  return found[0]?.value ?? 0;
}

async function scrape(target: Service, token?: string) {
  const response = await target.call('/metrics', { token });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return { text, samples: parsePrometheus(text) };
}

describe('mfa_enabled_users, kept in the writes that change it (issue 33: no count of factors per scrape)', () => {
  test('it follows MFA turned on, a second factor, MFA off, an operator’s reset, and a deleted user', async () => {
    const own = await startService();
    try {
      const count = async () => sampleValue((await scrape(own)).samples, 'mfa_enabled_users');
      assert.equal(await count(), 0);
      const first = await own.createUserWithMfa('counted-1', PASSWORD, nextPhone());
      const second = await own.createUserWithMfa('counted-2', PASSWORD, nextPhone());
      const third = await own.createUserWithMfa('counted-3', PASSWORD, nextPhone());
      assert.equal(await count(), 3);
      // A second factor does not count the user twice.
      const start = await expectStatus(
        own.call('/mfa/totp/request/', { method: 'PUT', token: first.token, body: {} }),
        200,
      );
      const app = OTPAuth.URI.parse(start.otpauth_uri);
      await expectStatus(
        own.call('/mfa/totp/verify/', {
          method: 'PUT',
          token: first.token,
          body: { mfa_code: app.generate({ timestamp: own.clock.now().getTime() }) },
        }),
        200,
      );
      assert.equal(await count(), 3);
      await expectStatus(own.call('/mfa/', { method: 'DELETE', token: first.token }), 204);
      assert.equal(await count(), 2);
      await expectStatus(own.call(`/admin/users/${second.userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      assert.equal(await count(), 1);
      await expectStatus(own.call(`/admin/users/${third.userId}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      assert.equal(await count(), 0);
    } finally {
      await own.close();
    }
  });
});

describe('GET /metrics', () => {
  test('without METRICS_TOKEN it is open, in the Prometheus text format, with every metric the issue names', async () => {
    const { samples, text } = await scrape(service);
    for (const family of [
      'http_request_duration_seconds',
      'mfa_sms_sent_total',
      'mfa_sms_send_duration_seconds',
      'mfa_code_checks_total',
      'mfa_logins_total',
      'mfa_enabled_users',
      'mfa_sms_country_paused',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'));
    }
    assert.match(text, /^# TYPE http_request_duration_seconds histogram$/m);
    assert.match(text, /^# TYPE mfa_sms_send_duration_seconds histogram$/m);
    assert.match(text, /^# TYPE mfa_enabled_users gauge$/m);
    assert.equal(sampleValue(samples, 'mfa_enabled_users'), 0);
  });

  describe('with METRICS_TOKEN set', () => {
    let guarded: Service;
    before(async () => {
      guarded = await startService({ env: { METRICS_TOKEN } });
    });
    after(() => guarded.close());

    for (const [name, headers] of [
      ['no token', {}],
      ['a wrong token', { authorization: `Bearer ${METRICS_TOKEN}x` }],
      ['the admin token', { authorization: `Bearer ${ADMIN_TOKEN}` }],
      ['the token in another scheme', { authorization: `Basic ${METRICS_TOKEN}` }],
    ] as const) {
      test(`${name}: 401 with an error body and no metrics`, async () => {
        const response = await guarded.call('/metrics', { headers });
        assert.equal(response.status, 401);
        const text = await response.text();
        assert.doesNotMatch(text, /mfa_|http_request/);
        const body = JSON.parse(text);
        assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer /);
      });
    }

    test('the right token: 200 with the metrics', async () => {
      const { text } = await scrape(guarded, METRICS_TOKEN);
      assert.match(text, /^# TYPE mfa_logins_total counter$/m);
    });
  });

  describe('after a real flow', () => {
    const TWILIO_TIMEOUT_MS = 1000;
    let flow: Service;
    let samples: Sample[];
    let text: string;
    /** Everything a label must never hold: usernames, ids, numbers and secrets used in the flow. */
    const secrets: string[] = [];
    const users = {
      alice: { username: 'metrics-alice', password: 'alice-password-1f9e', phone: nextPhone() },
      bob: { username: 'metrics-bob', password: 'bob-password-77ac', phone: nextPhone() },
      carol: { username: 'metrics-carol', password: 'carol-password-3b21', phone: GB_PHONE },
      dave: { username: 'metrics-dave', password: 'dave-password-90d4', phone: nextPhone() },
    };

    before(async () => {
      flow = await startService({
        env: { SMS_ALLOWED_COUNTRIES: 'US', SMS_USER_HOURLY_LIMIT: '2' },
        adjust: (config) =>
          config.sms.kind === 'twilio' ? { ...config, sms: { ...config.sms, timeoutMs: TWILIO_TIMEOUT_MS } } : config,
      });
      // The hourly SMS caps count per clock hour: keep the flow inside one.
      const intoHourMs = flow.clock.now().getTime() % 3_600_000;
      if (intoHourMs > 3_600_000 - 300_000) flow.clock.advance((3_600_000 - intoHourMs) / 1000 + 1);
      const ids: Record<string, string> = {};
      const tokens: Record<string, string> = {};
      for (const [name, user] of Object.entries(users)) {
        ids[name] = await flow.createUser(user.username, user.password);
        const login = await expectStatus(flow.login(user.username, user.password), 200);
        tokens[name] = login.access_token;
        secrets.push(user.username, user.password, user.phone, `+${user.phone}`, ids[name] ?? '');
        secrets.push(login.access_token, login.refresh_token);
      }
      const enrol = (name: keyof typeof users, phone = users[name].phone) =>
        flow.call('/mfa/sms/request/', { method: 'PUT', token: tokens[name], body: { phone_number: phone } });
      const verify = (name: keyof typeof users, code: string) =>
        flow.call('/mfa/sms/verify/', { method: 'PUT', token: tokens[name], body: { mfa_code: code } });

      // Alice enrols (one wrong code first), then logs in with her second factor.
      const { alice } = users;
      await expectStatus(enrol('alice'), 200);
      const enrolCode = flow.twilio.lastCodeFor(`+${alice.phone}`);
      await expectStatus(verify('alice', enrolCode === '000000' ? '111111' : '000000'), 400);
      await expectStatus(verify('alice', enrolCode), 200);
      assert.deepEqual(await expectStatus(flow.login(alice.username, alice.password), 200), {
        mfa_required: true,
        mfa_type: 'sms',
      });
      // Inside the resend cooldown: mfa_required again, and no second SMS.
      await expectStatus(flow.login(alice.username, alice.password), 200);
      const loginCode = flow.twilio.lastCodeFor(`+${alice.phone}`);
      const wrongCode = loginCode === '000000' ? '111111' : '000000';
      await expectStatus(flow.login(alice.username, alice.password, { mfa_code: wrongCode }), 400);
      const strong = await expectStatus(flow.login(alice.username, alice.password, { mfa_code: loginCode }), 200);
      assert.deepEqual(decodeJwt(strong.access_token).amr, ['pwd', 'sms']);
      secrets.push(strong.access_token, strong.refresh_token);
      await expectStatus(flow.login(alice.username, alice.password, { mfa_code: loginCode }), 400);
      await expectStatus(flow.login(alice.username, 'not-alice-password'), 400);
      await expectStatus(flow.call(`/admin/users/${ids.alice}/events`, { token: ADMIN_TOKEN }), 200);

      // Bob's number is refused by the provider; then the provider fails, then it hangs.
      flow.twilio.refuse(`+${users.bob.phone}`);
      await expectStatus(enrol('bob'), 400);
      flow.twilio.behave('fail');
      await expectStatus(enrol('bob'), 502);
      flow.twilio.behave('hang');
      await expectStatus(enrol('bob'), 504);
      flow.twilio.behave('deliver');

      // Carol's GB number is outside the allowlist.
      await expectStatus(enrol('carol'), 400);

      // Dave asks again inside the cooldown, then past it, then past his hourly cap of 2.
      await expectStatus(enrol('dave'), 200);
      await expectStatus(enrol('dave'), 429);
      flow.clock.advance(31);
      await expectStatus(enrol('dave'), 200);
      flow.clock.advance(31);
      await expectStatus(enrol('dave'), 429);

      // A client puts a number and an id where no route is: the path must not become a label.
      await expectStatus(flow.call(`/${alice.phone}/${ids.alice}`), 404);

      for (const message of flow.twilio.messages) secrets.push(/\b(\d{6})\b/.exec(message.body)?.[1] ?? '');
      ({ text, samples } = await scrape(flow));
    });
    after(() => flow.close());

    test('http_request_duration_seconds counts requests by route template, method and status', () => {
      const count = (route: string, method: string, status: number) =>
        sampleValue(samples, 'http_request_duration_seconds_count', { route, method, status: String(status) });
      assert.equal(count('/admin/users', 'POST', 201), 4);
      assert.equal(count('/mfa/oauth2/token/', 'POST', 200), 4 + 3);
      assert.equal(count('/mfa/oauth2/token/', 'POST', 400), 3);
      assert.equal(count('/mfa/sms/request/', 'PUT', 200), 3);
      assert.equal(count('/mfa/sms/request/', 'PUT', 400), 2);
      assert.equal(count('/mfa/sms/request/', 'PUT', 429), 2);
      assert.equal(count('/mfa/sms/request/', 'PUT', 502), 1);
      assert.equal(count('/mfa/sms/request/', 'PUT', 504), 1);
      assert.equal(count('/mfa/sms/verify/', 'PUT', 400), 1);
      assert.equal(count('/mfa/sms/verify/', 'PUT', 200), 1);
      assert.equal(count('/admin/users/:id/events', 'GET', 200), 1);
      assert.equal(count('unmatched', 'GET', 404), 1);
      const buckets = samples.filter(
        (sample) =>
          sample.name === 'http_request_duration_seconds_bucket' && sample.labels.route === '/mfa/sms/request/',
      );
      assert.ok(buckets.length > 0 && buckets.every((sample) => sample.labels.le !== undefined));
      const routeLabels = new Set(
        samples.filter((sample) => sample.name.startsWith('http_request_duration_seconds')).map((s) => s.labels.route),
      );
      const templates = new Set(routes.map((route) => route.url));
      for (const route of routeLabels) assert.ok(route === 'unmatched' || templates.has(route ?? ''), `route=${route}`);
    });

    test('mfa_sms_sent_total counts by purpose, country calling code, outcome and provider (none when suppressed)', () => {
      const sent = (purpose: string, countryCallingCode: string, outcome: string) =>
        sampleValue(samples, 'mfa_sms_sent_total', {
          purpose,
          country_calling_code: countryCallingCode,
          outcome,
          provider: outcome.startsWith('suppressed_') ? 'none' : 'twilio',
        });
      assert.equal(sent('enrol', '1', 'sent'), 3);
      assert.equal(sent('login', '1', 'sent'), 1);
      assert.equal(sent('login', '1', 'suppressed_cooldown'), 1);
      assert.equal(sent('enrol', '1', 'suppressed_cooldown'), 1);
      assert.equal(sent('enrol', '1', 'suppressed_cap'), 1);
      assert.equal(sent('enrol', '1', 'refused'), 1);
      assert.equal(sent('enrol', '1', 'failed'), 1);
      assert.equal(sent('enrol', '1', 'timeout'), 1);
      assert.equal(sent('enrol', '44', 'suppressed_country'), 1);
      const total = samples
        .filter((sample) => sample.name === 'mfa_sms_sent_total')
        .reduce((sum, sample) => sum + sample.value, 0);
      assert.equal(total, 11, 'no other series');
      assert.equal(flow.twilio.messages.length, 5, 'the fake took the 4 counted as sent and the one it never answered');
    });

    test('mfa_sms_send_duration_seconds observes each time the provider was asked, the hang included, by provider', () => {
      const twilio = { provider: 'twilio' };
      assert.equal(sampleValue(samples, 'mfa_sms_send_duration_seconds_count', twilio), 7);
      assert.equal(sampleValue(samples, 'mfa_sms_send_duration_seconds_bucket', { ...twilio, le: '+Inf' }), 7);
      assert.ok(sampleValue(samples, 'mfa_sms_send_duration_seconds_sum', twilio) >= TWILIO_TIMEOUT_MS / 1000);
      assert.ok(
        sampleValue(samples, 'mfa_sms_send_duration_seconds_bucket', { ...twilio, le: '0.05' }) < 7,
        'the hang is slow',
      );
    });

    test('mfa_code_checks_total counts by purpose and outcome', () => {
      const checks = (purpose: string, outcome: string) =>
        sampleValue(samples, 'mfa_code_checks_total', { purpose, factor_type: 'sms', outcome });
      assert.equal(checks('enrol', 'wrong'), 1);
      assert.equal(checks('enrol', 'ok'), 1);
      assert.equal(checks('login', 'wrong'), 1);
      assert.equal(checks('login', 'ok'), 1);
      assert.equal(checks('login', 'spent'), 1);
    });

    test('mfa_logins_total counts by outcome, with the amr and factor type of successes', () => {
      const logins = (outcome: string, amr: string, factorType = '') =>
        sampleValue(samples, 'mfa_logins_total', { outcome, amr, factor_type: factorType });
      assert.equal(logins('tokens', 'pwd'), 4);
      assert.equal(logins('tokens', 'pwd sms', 'sms'), 1);
      assert.equal(logins('mfa_required', ''), 2);
      assert.equal(logins('invalid_grant', ''), 3);
      assert.equal(logins('throttled', ''), 0);
    });

    test('mfa_enabled_users is the number of users with MFA on', () => {
      assert.equal(sampleValue(samples, 'mfa_enabled_users'), 1);
    });

    test('no label value holds a phone number, user id, username, password, code or token of the flow', () => {
      const values = samples.flatMap((sample) => Object.values(sample.labels));
      const used = secrets.filter((secret) => secret.length > 0);
      assert.ok(used.length >= 4 * 7 + 4, 'the flow collected what to look for');
      for (const secret of used) {
        assert.ok(!values.some((value) => value.includes(secret)), `a label holds ${secret}`);
        if (secret.length > 6) assert.ok(!text.includes(secret), `/metrics shows ${secret}`);
      }
      // Every label is one of a small, fixed set of names.
      const names = new Set(samples.flatMap((sample) => Object.keys(sample.labels)));
      for (const name of names) {
        assert.ok(
          [
            'route',
            'method',
            'status',
            'le',
            'purpose',
            'country_calling_code',
            'outcome',
            'amr',
            'factor_type',
            'provider',
            'country',
            'flow',
          ].includes(name),
          `label ${name}`,
        );
      }
    });
  });
});

/** Fastify's `/admin/users/:id/events` as OpenAPI spells it. */
function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const ERROR_BODY_FIELDS = ['error', 'error_description'];
/** Routes whose success answer has no body (204, and RFC 7009 §2.2's empty 200). */
const EMPTY_SUCCESS = new Set([
  'DELETE /mfa/',
  'POST /mfa/oauth2/revoke/',
  'DELETE /admin/users/:id',
  'DELETE /admin/users/:id/mfa',
  'DELETE /admin/users/:id/sessions',
  'POST /admin/users/:id/unlock',
  'POST /admin/webhooks/:id/deliveries/:event_id/redeliver',
  'POST /admin/sms/countries/:country/resume',
  'DELETE /mfa/factors/:id/',
  'DELETE /admin/webhooks/:id',
  'DELETE /admin/clients/:id',
  'PUT /mfa/password/',
  'PUT /mfa/password/reset/',
  'DELETE /mfa/password/',
  'DELETE /mfa/devices/:id/',
  'POST /admin/users/:id/password',
  'DELETE /mfa/recovery-request/',
]);

describe('GET /openapi.json', () => {
  let document: any;
  before(async () => {
    const { status, body } = await json(service.call('/openapi.json'));
    assert.equal(status, 200);
    document = body;
  });

  /** The routes a client calls: Fastify's automatic HEAD twins of GET routes and hidden ones left out. */
  function documentedRoutes() {
    const gets = new Set(routes.filter((route) => route.method === 'GET').map((route) => route.url));
    return routes.filter((route) => !(route.method === 'HEAD' && gets.has(route.url)) && !route.isHidden);
  }

  test('is a valid OpenAPI 3.1 document', async () => {
    assert.match(document.openapi, /^3\.1\.\d+$/);
    const result = await validate(structuredClone(document));
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.equal(result.specification, 'OpenAPI');
  });

  test('lists every registered route, and nothing else', () => {
    assert.ok(routes.length > 15, `the onRoute hook saw ${routes.length} routes`);
    assert.deepEqual(
      routes.filter((route) => route.isHidden).map((route) => `${route.method} ${route.url}`),
      [
        'OPTIONS /mfa/oauth2/token/',
        'OPTIONS /mfa/oauth2/userinfo/',
        'OPTIONS /mfa/oauth2/revoke/',
        'OPTIONS /.well-known/jwks.json',
        'OPTIONS /.well-known/openid-configuration',
        'OPTIONS /.well-known/oauth-authorization-server',
        'GET /mfa/oauth2/authorize/',
        'HEAD /mfa/oauth2/authorize/',
        'POST /mfa/oauth2/authorize/',
        'GET /mfa/oauth2/logout/',
        'HEAD /mfa/oauth2/logout/',
        'POST /mfa/oauth2/logout/',
        'GET /account/',
        'HEAD /account/',
        'GET /account/assets/:name',
        'HEAD /account/assets/:name',
        'GET /sign-in/',
        'HEAD /sign-in/',
        'GET /sign-in/assets/:name',
        'HEAD /sign-in/assets/:name',
        'GET /admin/console/',
        'HEAD /admin/console/',
        'GET /admin/console/assets/:name',
        'HEAD /admin/console/assets/:name',
        'GET /account/reset/',
        'HEAD /account/reset/',
        'GET /account/reset/assets/:name',
        'HEAD /account/reset/assets/:name',
        'GET /openapi.json',
        'HEAD /openapi.json',
      ],
      'hidden: the document itself, the pages (HTML for browsers, not API), the browser-flow endpoints that answer with redirects and pages, and the CORS preflights',
    );
    const registered = documentedRoutes()
      .map((route) => `${route.method} ${openApiPath(route.url)}`)
      .sort();
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    assert.deepEqual(documented, registered);
    for (const expected of ['POST /mfa/oauth2/token/', 'GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /mfa/']) {
      assert.ok(registered.includes(expected), expected);
    }
  });

  test('every route has its request body, its success answer and its error answers', () => {
    for (const route of documentedRoutes()) {
      const name = `${route.method} ${route.url}`;
      const operation = document.paths[openApiPath(route.url)][route.method.toLowerCase()];
      const responses = operation.responses as Record<string, any>;

      if (route.hasBody) {
        assert.equal(operation.requestBody?.required, true, `${name}: request body`);
        const schema = operation.requestBody.content['application/json']?.schema;
        assert.ok(Object.keys(schema?.properties ?? {}).length > 0, `${name}: request body schema`);
        assert.ok(responses['400'], `${name}: the 400 for a body that fails its schema`);
      } else {
        assert.equal(operation.requestBody, undefined, `${name}: no request body`);
      }
      for (const parameter of route.url.match(/:[A-Za-z0-9_]+/g) ?? []) {
        const declared = (operation.parameters ?? []).find((p: any) => p.in === 'path' && `:${p.name}` === parameter);
        assert.equal(declared?.required, true, `${name}: path parameter ${parameter}`);
      }

      const successes = Object.keys(responses).filter((status) => /^2\d\d$/.test(status));
      assert.equal(successes.length, 1, `${name}: one success answer`);
      if (!EMPTY_SUCCESS.has(name)) {
        const content = responses[successes[0] ?? ''].content ?? {};
        const schemas = Object.values(content).map((media: any) => media.schema ?? {});
        assert.ok(schemas.length > 0, `${name}: the success answer has no content`);
        for (const schema of schemas) {
          assert.ok(
            ['type', 'anyOf', 'oneOf', '$ref', 'properties'].some((key) => key in schema),
            `${name}: the success answer has no schema`,
          );
        }
      }

      if (route.isGuarded) assert.ok(responses['401'], `${name}: the 401 of its guard`);
      for (const [status, response] of Object.entries(responses)) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const schema = response.content?.['application/json']?.schema;
        assert.deepEqual(
          [...(schema?.required ?? [])].sort(),
          ERROR_BODY_FIELDS,
          `${name}: ${status} is an error body`,
        );
      }
    }
  });

  test('the OAuth endpoints document form bodies (RFC 6749 §4.3.2) as well as JSON', () => {
    for (const path of ['/mfa/oauth2/token/', '/mfa/oauth2/revoke/', '/mfa/oauth2/introspect/']) {
      const content = document.paths[path].post.requestBody.content;
      assert.deepEqual(Object.keys(content).sort(), ['application/json', 'application/x-www-form-urlencoded'], path);
      assert.deepEqual(content['application/x-www-form-urlencoded'], content['application/json'], path);
    }
  });

  test('GET /metrics is documented as Prometheus text, not JSON', () => {
    const success = document.paths['/metrics'].get.responses['200'];
    assert.deepEqual(Object.keys(success.content).length, 1);
    assert.match(Object.keys(success.content)[0] ?? '', /^text\/plain\b/);
    assert.equal(success.content[Object.keys(success.content)[0] ?? ''].schema.type, 'string');
  });

  test('every answer a route gives to a bare request (no token, no body) is one it documents', async () => {
    for (const route of documentedRoutes()) {
      const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'unknown-id');
      const response = await service.call(path, { method: route.method });
      await response.arrayBuffer();
      const operation = document.paths[openApiPath(route.url)][route.method.toLowerCase()];
      assert.ok(
        operation.responses[String(response.status)],
        `${route.method} ${route.url} answered ${response.status}, which it does not document`,
      );
    }
  });
});

describe('x-request-id', () => {
  /**
   * Sends one request and returns its answer with the log lines written while it was handled: from
   * before it was sent until its own "request served" line (tests here run one request at a time).
   */
  async function callAndCollectLog(path: string, init: Parameters<Service['call']>[1] = {}) {
    const start = service.log().length;
    const response = await service.call(path, init);
    const text = await response.text();
    const id = response.headers.get('x-request-id') ?? '';
    for (let attempt = 0; attempt < 100; attempt++) {
      if (/"msg":"request (served|refused: bad URL)"/.test(service.log().slice(start))) break;
      await sleep(10);
    }
    const lines = service
      .log()
      .slice(start)
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as { reqId?: string; msg?: string; error?: string });
    return { response, text, id, lines };
  }

  test('a well-formed id from the caller is echoed and every log line of its request carries it', async () => {
    for (const offered of ['3f2a9c1e-0b7d-4d4e-9a51-6c1f2e7d8a90', 'lb.7f3k:node-12_retry.2', 'x'.repeat(128)]) {
      const { response, id, lines } = await callAndCollectLog('/healthz', { headers: { 'x-request-id': offered } });
      assert.equal(response.status, 200);
      assert.equal(id, offered);
      assert.ok(lines.length > 0);
      for (const line of lines) assert.equal(line.reqId, offered, JSON.stringify(line));
    }
  });

  test('without one, or with a malformed one, a fresh id is generated per request', async () => {
    const seen = new Set<string>();
    const malformed = [undefined, '', 'x'.repeat(129), 'has space', 'semi;colon', '<script>', 'quote"d', 'ünïcode'];
    for (const offered of malformed) {
      const headers: Record<string, string> = offered === undefined ? {} : { 'x-request-id': offered };
      const { response, id, lines } = await callAndCollectLog('/healthz', { headers });
      assert.equal(response.status, 200);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `for ${offered}`);
      assert.ok(!seen.has(id), 'a new id each time');
      seen.add(id);
      for (const line of lines) assert.equal(line.reqId, id, JSON.stringify(line));
      if (offered) assert.ok(!service.log().includes(offered), 'the malformed id is not logged');
    }
  });

  test('every log line of a request that reaches the domains and the SMS provider carries its id; its one request line names the error answered', async () => {
    await service.createUser('request-ids', PASSWORD);
    const token = await service.accessToken('request-ids', PASSWORD);
    const refused = nextPhone();
    service.twilio.refuse(`+${refused}`);
    // [path, request, status, fewest log lines it must write]
    const cases: [string, Parameters<Service['call']>[1], number, number][] = [
      ['/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: refused } }, 400, 2],
      ['/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: nextPhone() } }, 200, 2],
      ['/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: '000000' } }, 400, 1],
      [
        '/mfa/oauth2/token/',
        { method: 'POST', body: { grant_type: 'password', username: 'x', password: 'y' } },
        400,
        1,
      ],
      ['/mfa/', { method: 'GET', token: 'not-a-token' }, 401, 1],
      ['/mfa/', { method: 'POST', body: {} }, 405, 1],
      ['/no/such/route', {}, 404, 1],
      // Refused before routing: a path parameter too long, or not decodable.
      [`/admin/users/${'a'.repeat(101)}/events`, { token: ADMIN_TOKEN }, 414, 1],
      ['/admin/users/%zz/events', { token: ADMIN_TOKEN }, 400, 1],
    ];
    for (const [index, [path, init, status, fewestLines]] of cases.entries()) {
      const offered = `trace-${index}`;
      const { response, text, id, lines } = await callAndCollectLog(path, {
        ...init,
        headers: { ...init?.headers, 'x-request-id': offered },
      });
      assert.equal(response.status, status, `${init?.method} ${path}`);
      assert.equal(id, offered);
      assert.equal(response.headers.get('cache-control'), 'no-store', `${init?.method} ${path}`);
      assert.ok(lines.length >= fewestLines, `${init?.method} ${path} logged ${lines.length} line(s)`);
      for (const line of lines) assert.equal(line.reqId, offered, `${init?.method} ${path}: ${JSON.stringify(line)}`);
      // A request refused before routing has no onResponse line: its refusal is its one line.
      const served = lines.filter((line) => line.msg === 'request served' || line.msg === 'request refused: bad URL');
      assert.equal(served.length, 1, `${init?.method} ${path}: ${JSON.stringify(lines)}`);
      const answered = status >= 400 ? JSON.parse(text).error : undefined;
      assert.equal(served[0]?.error, answered, `${init?.method} ${path}`);
    }
  });
});
