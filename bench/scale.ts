// `npm run bench -- --scale [--users=1000000] [--events=N] [--sqlite | --postgres] [--duration=10]`:
// whether the service's cost stays flat as the data grows. For each database, a population of
// 1 000 users and one of `--users` (bench/seed.ts; audit rows ten per user unless `--events`
// says), measured in one run one after the other, and the ratio of each figure between them.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { hash } from '@node-rs/argon2';
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
      // The service's own clean-up waits an hour: it is measured on its own below.
      const { db } = await openDatabase(databaseUrl);
      await db
        .insertInto('scheduled_job')
        .values({ name: 'audit_retention', due_at: new Date(Date.now() + 3_600_000).toISOString() })
        .execute();
      await db.destroy();
    }
    const bytes = await databaseBytes(dialect, databaseUrl, path);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const startedAt = performance.now();
    const service = await spawnServer(
      [SERVICE_MAIN],
      serviceEnvironment({ port, databaseUrl, twilioUrl: twilio.url }),
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
      memory.phaseEnded('measured');
      const pruned = await pruneOnce(databaseUrl);
      console.log(
        `  GET /mfa/ ${mfaStatus.cpuMicrosPerRequest} µs, login ${logins.cpuMicrosPerRequest} µs, search p99 ${search.p99Ms} ms, ` +
          `pruned ${pruned.rows} rows in ${round(pruned.seconds, 1)} s`,
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
    row('audit rows pruned per second', (f) => f.prunePerSecond, 'keeps up'),
    row('audit rows pruned', (f) => f.prunedRows, ''),
    row('bytes per user (audit rows apart)', (f) => f.bytesPerUser, ''),
    row('bytes per audit row', (f) => f.bytesPerEvent, ''),
    row('peak memory of the service', (f) => f.peakMemoryMb, '< 160 MB', ' MB'),
    row('seeding', (f) => f.seedSeconds, '', ' s'),
  ]);
}
