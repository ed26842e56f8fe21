// `npm run bench -- --scale [--users=1000000] [--events=N] [--sqlite | --postgres] [--duration=10]`:
// whether the service's cost stays flat as the data grows. For each database, a population of
// 1 000 users and one of `--users` (bench/seed.ts; audit rows ten per user unless `--events`
// says), measured in one run one after the other, and the ratio of each figure between them.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { hash } from '@node-rs/argon2';
import type autocannon from 'autocannon';
import { sql } from 'kysely';
import pino from 'pino';
import { systemClock } from '../src/clock.js';
import { createRetentionWorker } from '../src/retention/retention-worker.js';
import { openDatabase } from '../src/store/database.js';
import { createStore } from '../src/store/store.js';
import { startFakeTwilio } from '../test/support/fake-twilio.js';
import { freePort, SERVICE_MAIN } from '../test/support/node-process.js';
import { createTestSchema } from '../test/support/postgres.js';
import {
  ADMIN_TOKEN,
  cannon,
  type Dialect,
  json,
  PASSWORD,
  peakMemoryMbOf,
  phasePeaks,
  round,
  serviceEnvironment,
  spawnServer,
  stopped,
} from './measure.js';
import { seedPopulation, seedUsername } from './seed.js';

const argv = process.argv.join(' ');
const durationSeconds = Number(/--duration=(\d+)/.exec(argv)?.[1] ?? 10);
const largeUsers = Number(/--users=(\d+)/.exec(argv)?.[1] ?? 1_000_000);
/** Audit rows per user: ten, or `--events` over `--users`, the same at both sizes. */
const eventsPerUser = Number(/--events=(\d+)/.exec(argv)?.[1] ?? largeUsers * 10) / largeUsers;
const SMALL_USERS = 1000;
const METRICS_TOKEN = 'bench-metrics-token-0123456789';
const ADMIN_CLI = fileURLToPath(new URL('../dist/cli/admin.js', import.meta.url));
const RETENTION_DAYS = 90;

interface ScaleFigures {
  users: number;
  events: number;
  seedSeconds: number;
  readyMs: number;
  /** GET /mfa/: the service's CPU per request, and PostgreSQL's. */
  mfaStatusMicros: number;
  mfaStatusPostgresMicros?: number;
  /** The password grant with a cheap stored hash: a login's CPU around its hash. */
  loginMicros: number;
  loginPostgresMicros?: number;
  searchP99Ms: number;
  searchPerSecond: number;
  /** Every other read of the admin API and the console, and a /metrics scrape, 4 connections: p99 in ms and CPU µs per answer. */
  operatorReads: Record<string, { p99Ms: number; cpuMicros: number }>;
  /** `npm run admin -- list-users`: the first page's lines, the whole list, and its peak memory. */
  listUsers: { firstPageMs: number; wholeSeconds: number; lines: number; peakMemoryMb: number };
  /** Audit rows past the retention deleted per second by the retention worker. */
  prunedRows: number;
  prunePerSecond: number;
  /** The database's size over the users, audit rows apart; and an audit row's. */
  bytesPerUser: number;
  bytesPerEvent: number;
  peakMemoryMb: number;
}

/** Bytes on disk: the SQLite file and its WAL; on PostgreSQL, each table of the schema with its indexes and TOAST. */
async function databaseBytes(
  dialect: Dialect,
  databaseUrl: string,
  path: string,
): Promise<{ total: number; events: number }> {
  const { db } = await openDatabase(databaseUrl);
  try {
    if (dialect === 'sqlite') {
      const total = [path, `${path}-wal`].reduce((sum, file) => {
        try {
          return sum + statSync(file).size;
        } catch {
          return sum;
        }
      }, 0);
      // dbstat counts each table's and index's pages; when it is not compiled in, the audit rows
      // are reckoned from the total by their share of rows.
      try {
        const { rows } = await sql<{ bytes: number }>`select sum(pgsize) as bytes from dbstat
          where name in (select name from sqlite_master where tbl_name = 'security_event')`.execute(db);
        return { total, events: Number(rows[0]?.bytes ?? 0) };
      } catch {
        return { total, events: Number.NaN };
      }
    }
    const { rows } = await sql<{ total: string; events: string }>`select
        sum(pg_total_relation_size(c.oid)) as total,
        sum(pg_total_relation_size(c.oid)) filter (where c.relname = 'security_event') as events
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'r'`.execute(db);
    return { total: Number(rows[0]?.total ?? 0), events: Number(rows[0]?.events ?? 0) };
  } finally {
    await db.destroy();
  }
}

/** The retention worker, as a node runs it, on the seeded audit trail: rows deleted and the time taken. */
async function pruneOnce(databaseUrl: string): Promise<{ rows: number; seconds: number }> {
  const { db } = await openDatabase(databaseUrl);
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  const worker = createRetentionWorker({
    store: createStore(db),
    clock: systemClock,
    retentionDays: RETENTION_DAYS,
    log,
  });
  try {
    await db.deleteFrom('scheduled_job').execute();
    const started = performance.now();
    worker.start();
    while (!lines.some((line) => /retention clean-up (done|failed)/.test(line))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const done = JSON.parse(lines.find((line) => line.includes('retention clean-up done')) ?? '{}');
    return { rows: Number(done.security_events ?? 0), seconds };
  } finally {
    await worker.stop();
    await db.destroy();
  }
}

/** Seconds each operator read is measured for, 4 connections: enough answers for a p99, short enough for a dozen reads. */
const OPERATOR_READ_SECONDS = 3;

/**
 * Every read of the admin API and the console beside the search, and a /metrics scrape, at this
 * size: p99 in ms. The user reads go to users spread over the population, a third with MFA.
 */
async function measureOperatorReads(
  pid: number,
  base: string,
  users: number,
  dialect: Dialect,
): Promise<ScaleFigures['operatorReads']> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const ids: string[] = [];
  for (let k = 0; k < 30; k += 1) {
    const username = seedUsername((k * 104_729) % users);
    const found = await json(`${base}/admin/users?username=${username}`, { headers: admin });
    ids.push(found.id);
  }
  let next = 0;
  const eachUser = (path: (id: string) => string) => ({
    setupRequest: (request: { path?: string }) => ({ ...request, path: path(ids[next++ % ids.length] ?? '') }),
  });
  const reads: [string, autocannon.Options['requests'] | string][] = [
    [
      'GET /admin/users?username=',
      [
        {
          setupRequest: (request) => ({
            ...request,
            path: `/admin/users?username=${seedUsername((next++ * 7919) % users)}`,
          }),
        },
      ],
    ],
    ['GET /admin/users/{id}', [eachUser((id) => `/admin/users/${id}`)]],
    ['GET /admin/users/{id}/events', [eachUser((id) => `/admin/users/${id}/events`)]],
    ['GET /admin/users/search?q=seed- (first page)', '/admin/users/search?q=seed-'],
    ['GET /admin/stats/sign-ins (168 h)', '/admin/stats/sign-ins'],
    ['GET /admin/stats/sms (168 h)', '/admin/stats/sms'],
    ['GET /admin/sms/countries', '/admin/sms/countries'],
    ['GET /admin/clients', '/admin/clients'],
    ['GET /admin/signing-keys', '/admin/signing-keys'],
    ['GET /admin/webhooks', '/admin/webhooks'],
    ['GET /metrics', '/metrics'],
  ];
  const measured: ScaleFigures['operatorReads'] = {};
  for (const [name, what] of reads) {
    const options = (duration: number) => ({
      url: typeof what === 'string' ? `${base}${what}` : `${base}/`,
      duration,
      connections: 4,
      headers: name === 'GET /metrics' ? { authorization: `Bearer ${METRICS_TOKEN}` } : admin,
      ...(typeof what === 'string' ? {} : { requests: what }),
    });
    // A second first, not counted: the first calls of a route compile its code and its statements.
    await cannon(pid, options(1), { dialect });
    const figures = await cannon(pid, options(OPERATOR_READ_SECONDS), { dialect });
    if (figures.errors > 0) throw new Error(`${name}: ${figures.errors} answers other than 200`);
    measured[name] = { p99Ms: figures.p99Ms, cpuMicros: figures.cpuMicrosPerRequest };
  }
  return measured;
}

/** `npm run admin -- list-users` on the seeded database, as an operator runs it: its lines, times and peak memory. */
async function listEveryUser(databaseUrl: string): Promise<ScaleFigures['listUsers']> {
  const started = performance.now();
  const cli = spawn(process.execPath, [ADMIN_CLI, 'list-users'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Its peak is read while it runs: once it has ended, /proc has nothing to say.
  let peakMemoryMb = 0;
  const sampler = setInterval(() => {
    peakMemoryMb = Math.max(peakMemoryMb, peakMemoryMbOf(cli.pid ?? 0));
  }, 50);
  let lines = 0;
  let firstPageMs = 0;
  for await (const line of createInterface({ input: cli.stdout })) {
    if (line.length > 0) lines += 1;
    if (lines === 1000 && firstPageMs === 0) firstPageMs = Math.round(performance.now() - started);
  }
  const [code] = (await once(cli, 'exit')) as [number | null];
  clearInterval(sampler);
  if (code !== 0) throw new Error(`list-users exited with ${code}`);
  return { firstPageMs, wholeSeconds: round((performance.now() - started) / 1000, 1), lines, peakMemoryMb };
}

async function measureAt(dialect: Dialect, users: number, cheapHash: string): Promise<ScaleFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'mfa-scale-'));
  const path = join(dir, 'mfa.sqlite');
  const schema = dialect === 'postgres' ? await createTestSchema() : undefined;
  const databaseUrl = schema?.databaseUrl ?? `sqlite:${path}`;
  const twilio = await startFakeTwilio();
  const events = Math.round(users * eventsPerUser);
  try {
    console.log(`${dialect}, ${users} users, ${events} audit rows: seeding…`);
    const seedStarted = performance.now();
    await seedPopulation(databaseUrl, { users, events, passwordHash: cheapHash });
    const seedSeconds = Math.round((performance.now() - seedStarted) / 1000);
    {
      // The service's own clean-ups wait an hour: the prune is measured on its own below, and the
      // expired rows' batches (the seed's stale throttle rows) would run among the measurements.
      const { db } = await openDatabase(databaseUrl);
      const dueAt = new Date(Date.now() + 3_600_000).toISOString();
      await db
        .insertInto('scheduled_job')
        .values([
          { name: 'audit_retention', due_at: dueAt },
          { name: 'expired_rows', due_at: dueAt },
        ])
        .execute();
      await db.destroy();
    }
    const bytes = await databaseBytes(dialect, databaseUrl, path);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const startedAt = performance.now();
    const service = await spawnServer(
      [SERVICE_MAIN],
      serviceEnvironment({ port, databaseUrl, twilioUrl: twilio.url, extra: { METRICS_TOKEN } }),
      `${base}/mfa/`,
    );
    const readyMs = Math.round(performance.now() - startedAt);
    const pid = service.pid ?? 0;
    const memory = phasePeaks(pid);
    try {
      console.log(`  ready in ${readyMs} ms (seeded in ${seedSeconds} s); GET /mfa/, logins, user search…`);
      // Users without MFA (index not a multiple of 3), spread over the whole population.
      const plainUser = (k: number) => {
        const index = (k * 7919) % users;
        return seedUsername(index % 3 === 0 ? (index + 1) % users : index);
      };
      const { access_token: accessToken } = await json(`${base}/mfa/oauth2/token/`, {
        method: 'POST',
        body: JSON.stringify({ grant_type: 'password', username: plainUser(1), password: PASSWORD }),
      });
      const mfaStatus = await cannon(
        pid,
        { url: `${base}/mfa/`, duration: durationSeconds, headers: { authorization: `Bearer ${accessToken}` } },
        { dialect },
      );
      let next = 0;
      const logins = await cannon(
        pid,
        {
          url: `${base}/mfa/oauth2/token/`,
          duration: durationSeconds,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          requests: [
            {
              setupRequest: (request) => {
                const index = next++;
                return {
                  ...request,
                  headers: { ...request.headers, 'x-forwarded-for': `198.51.100.${index % 250}` },
                  body: JSON.stringify({ grant_type: 'password', username: plainUser(index), password: PASSWORD }),
                };
              },
            },
          ],
        },
        { dialect },
      );
      // The console's search as an operator types it: a prefix of 7 to 10 characters of some username.
      let query = 0;
      const search = await cannon(
        pid,
        {
          url: `${base}/admin/users/search`,
          duration: durationSeconds,
          connections: 4,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          requests: [
            {
              setupRequest: (request) => {
                const username = seedUsername((query++ * 104_729) % users);
                return { ...request, path: `/admin/users/search?q=${username.slice(0, 7 + (query % 4))}` };
              },
            },
          ],
        },
        { dialect },
      );
      const operatorReads = await measureOperatorReads(pid, base, users, dialect);
      memory.phaseEnded('measured');
      const listUsers = await listEveryUser(databaseUrl);
      const pruned = await pruneOnce(databaseUrl);
      console.log(
        `  GET /mfa/ ${mfaStatus.cpuMicrosPerRequest} µs, login ${logins.cpuMicrosPerRequest} µs, search p99 ${search.p99Ms} ms, ` +
          `pruned ${pruned.rows} rows in ${round(pruned.seconds, 1)} s, list-users ${listUsers.lines} lines in ${listUsers.wholeSeconds} s`,
      );
      return {
        users,
        events,
        seedSeconds,
        readyMs,
        mfaStatusMicros: mfaStatus.cpuMicrosPerRequest,
        mfaStatusPostgresMicros: mfaStatus.postgresCpuMicrosPerRequest,
        loginMicros: logins.cpuMicrosPerRequest,
        loginPostgresMicros: logins.postgresCpuMicrosPerRequest,
        searchP99Ms: search.p99Ms,
        searchPerSecond: search.requestsPerSecond,
        operatorReads,
        listUsers,
        prunedRows: pruned.rows,
        prunePerSecond: Math.round(pruned.rows / pruned.seconds),
        bytesPerUser: Math.round((bytes.total - bytes.events) / users),
        bytesPerEvent: events > 0 ? Math.round(bytes.events / events) : 0,
        peakMemoryMb: memory.peaks.measured ?? 0,
      };
    } finally {
      await stopped(service);
    }
  } finally {
    await twilio.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const dialects: Dialect[] = argv.includes('--postgres')
  ? ['postgres']
  : argv.includes('--sqlite')
    ? ['sqlite']
    : ['sqlite', 'postgres'];
// Every user's stored hash is this cheap one (Argon2 verifies with the parameters in the hash), so
// a login's CPU here is what the service and the database spend around the hash.
const cheapHash = await hash(PASSWORD, { memoryCost: 8, timeCost: 1, parallelism: 1 });
for (const dialect of dialects) {
  const small = await measureAt(dialect, SMALL_USERS, cheapHash);
  const large = await measureAt(dialect, largeUsers, cheapHash);
  const ratio = (pick: (figures: ScaleFigures) => number | undefined) =>
    round((pick(large) ?? 0) / (pick(small) || 1), 2);
  const row = (
    name: string,
    pick: (figures: ScaleFigures) => number | undefined,
    target: string,
    unit = '',
  ): Record<string, string | number> => ({
    figure: name,
    [`${SMALL_USERS} users`]: `${pick(small) ?? ''}${unit}`,
    [`${largeUsers} users`]: `${pick(large) ?? ''}${unit}`,
    ratio: ratio(pick),
    target,
  });
  console.log(
    `\n${dialect}: ${SMALL_USERS} users (${small.events} audit rows) against ${largeUsers} (${large.events}), ` +
      `${durationSeconds} s per measurement, one run, ${availableParallelism()} cores`,
  );
  console.table([
    row('GET /mfa/, CPU µs/request', (f) => f.mfaStatusMicros, 'ratio ≤ 1.25'),
    ...(dialect === 'postgres' ? [row('  PostgreSQL CPU µs/request', (f) => f.mfaStatusPostgresMicros, '')] : []),
    row('login, cheap hash, CPU µs', (f) => f.loginMicros, 'ratio ≤ 1.25'),
    ...(dialect === 'postgres' ? [row('  PostgreSQL CPU µs/login', (f) => f.loginPostgresMicros, '')] : []),
    row('ready', (f) => f.readyMs, '< 2000 ms', ' ms'),
    row('user search p99', (f) => f.searchP99Ms, '< 50 ms', ' ms'),
    row('user search requests/s (4 connections)', (f) => f.searchPerSecond, ''),
    ...Object.keys(small.operatorReads).flatMap((name) => [
      row(`${name} p99`, (f) => f.operatorReads[name]?.p99Ms, '< 50 ms', ' ms'),
      row('  CPU µs/answer', (f) => f.operatorReads[name]?.cpuMicros, 'ratio ≤ 1.25'),
    ]),
    row('list-users: the first 1 000 lines', (f) => f.listUsers.firstPageMs, '', ' ms'),
    row('list-users: every user', (f) => f.listUsers.wholeSeconds, '', ' s'),
    row('list-users: peak memory', (f) => f.listUsers.peakMemoryMb, '', ' MB'),
    row('audit rows pruned per second', (f) => f.prunePerSecond, 'keeps up'),
    row('audit rows pruned', (f) => f.prunedRows, ''),
    row('bytes per user (audit rows apart)', (f) => f.bytesPerUser, ''),
    row('bytes per audit row', (f) => f.bytesPerEvent, ''),
    row('peak memory of the service', (f) => f.peakMemoryMb, '< 160 MB', ' MB'),
    row('seeding', (f) => f.seedSeconds, '', ' s'),
  ]);
}
