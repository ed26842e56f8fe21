import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/store/database.js';
import { migrateTo, migrateToLatest } from '../../src/store/migrate.js';
import { type FakeTwilio, startFakeTwilio } from './fake-twilio.js';
import { createTestSchema, onPostgres } from './postgres.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

let phoneCount = 0;
/**
 * A distinct valid US mobile-or-landline number (digits only) per call, each in a number range of
 * its own (+1 415 2xx xx01), so that the hourly per-number and per-range caps never join tests.
 */
export function nextPhone(): string {
  phoneCount += 1;
  return String(14_152_000_001 + phoneCount * 100);
}

/** A clock the test moves forward instead of sleeping. */
export class TestClock implements Clock {
  #now: number;
  constructor(startMs = Date.now()) {
    this.#now = startMs;
  }
  now() {
    return new Date(this.#now);
  }
  advance(seconds: number) {
    this.#now += seconds * 1000;
  }
  /** Moves to `ms` since the epoch, or stays where it is if that is earlier. */
  moveTo(ms: number) {
    this.#now = Math.max(this.#now, ms);
  }
}

export interface ServiceOptions {
  /** Extra environment, as an operator would set it (parsed by the real loadConfig). */
  env?: Record<string, string>;
  /** Overrides applied after parsing, for what no variable sets (the Twilio timeout). */
  adjust?: (config: Config) => Config;
  /**
   * An upgrade: the database is first migrated to `version` and given `seed`'s rows, as an older
   * release would have left it; the service then migrates it to the latest schema at start.
   */
  legacy?: { version: string; seed: (db: Kysely<any>) => Promise<void> };
  /** Where the built pages are read from, one folder each (default: this checkout's dist/). */
  pagesDir?: string;
  /** The service's clock (default: a TestClock at the present time). */
  clock?: TestClock;
  /** How often the retention clean-up is asked whether it is due (default a minute). */
  retentionCheckEveryMs?: number;
}

/**
 * Starts the real service (buildApp listening on 127.0.0.1:0) on a fresh database — a SQLite file,
 * or a schema of its own on PostgreSQL when TEST_DATABASE=postgres — with the fake Twilio as its
 * SMS provider, a test clock and a captured log.
 */
export async function startService(options: ServiceOptions = {}) {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-test-'));
  const dbPath = join(dir, 'mfa.sqlite');
  const schema = onPostgres ? await createTestSchema() : undefined;
  const parsed = loadConfig({
    ADMIN_TOKEN,
    DATABASE_URL: schema?.databaseUrl ?? `sqlite:${dbPath}`,
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000001',
    TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-tests',
    TWILIO_FROM: '+15005550006',
    TWILIO_API_URL: twilio.url,
    LOG_LEVEL: 'debug',
    ...options.env,
  });
  const config = options.adjust ? options.adjust(parsed) : parsed;
  const logLines: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  const clock = options.clock ?? new TestClock();
  const { db, dialect } = await openDatabase(config.databaseUrl, config.databasePool);
  if (options.legacy) {
    await migrateTo(db, options.legacy.version);
    await options.legacy.seed(db as unknown as Kysely<any>);
  }
  await migrateToLatest(db);
  const appDeps = { db, clock, logStream, pagesDir: options.pagesDir };
  const app = await buildApp(config, { ...appDeps, retentionCheckEveryMs: options.retentionCheckEveryMs });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const service = {
    url,
    clock,
    twilio,
    config,
    dialect,
    dir,
    /** The SQLite file (absent on PostgreSQL: use dumpDatabase). */
    dbPath,
    /** Every row of every table, as text, to search for secrets in either dialect. */
    async dumpDatabase(): Promise<string> {
      // Not Kysely's introspection: on PostgreSQL it reads every schema, and other test runs on the
      // server create and drop theirs while it reads.
      const listed =
        dialect === 'postgres'
          ? sql<{ name: string }>`select table_name as name from information_schema.tables
              where table_schema = current_schema() and table_type = 'BASE TABLE'`
          : sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`;
      const tables = (await listed.execute(db)).rows;
      const dumps = await Promise.all(
        tables.map(async (table) => {
          const rows = await sql`select * from ${sql.table(table.name)}`.execute(db);
          return `${table.name}: ${JSON.stringify(rows.rows)}`;
        }),
      );
      return dumps.join('\n');
    },
    /** Runs a statement on the service's database, as an older version or an operator would; returns its rows. */
    async execute<Row>(query: RawBuilder<Row>): Promise<Row[]> {
      return (await query.execute(db)).rows;
    },
    /**
     * Starts another node of the service on the same database and clock (not listening: its
     * workers run); resolves with its close function.
     */
    async startAnotherNode(nodeOptions: { retentionCheckEveryMs?: number } = {}): Promise<() => Promise<void>> {
      const node = await buildApp(config, { ...appDeps, ...nodeOptions });
      return () => node.close();
    },
    /** The rows a query reads from the service's database (the outbox's state, say). */
    async rows<Row>(query: RawBuilder<Row>): Promise<Row[]> {
      return (await query.execute(db)).rows;
    },
    /** Everything the server logged so far. */
    log: () => logLines.join(''),

    /** fetch against the service; a plain object body is sent as JSON. */
    call(
      path: string,
      init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {},
    ) {
      const headers: Record<string, string> = { ...init.headers };
      if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
      let body: string | undefined;
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
        headers['content-type'] ??= 'application/json';
      }
      return fetch(url + path, { method: init.method ?? 'GET', headers, body });
    },

    /** POST /admin/users; returns the new user's id. */
    async createUser(username: string, password: string): Promise<string> {
      const response = await service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username, password },
      });
      if (response.status !== 201) throw new Error(`createUser: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { id: string }).id;
    },

    /** POST /mfa/oauth2/token/ with the password grant (JSON body). */
    login(username: string, password: string, extra: Record<string, string> = {}) {
      return service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'password', username, password, ...extra },
      });
    },

    /** Logs in and returns the access token; throws unless tokens came back. */
    async accessToken(username: string, password: string, extra: Record<string, string> = {}): Promise<string> {
      const response = await service.login(username, password, extra);
      const body = (await response.json()) as { access_token?: string };
      if (response.status !== 200 || !body.access_token) {
        throw new Error(`login: ${response.status} ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },

    /** Enrols `phone` (digits) as the SMS factor with `token`'s login: request, then the code sent. */
    async enrolSms(token: string, phone: string) {
      await expectStatus(
        service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } }),
        200,
      );
      const code = twilio.lastCodeFor(`+${phone}`);
      return expectStatus(service.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } }), 200);
    },

    /**
     * Creates a user with SMS MFA on `phone` (digits) and returns a token whose login carried the
     * second factor. Moves the clock past the resend cooldown on the way.
     */
    async createUserWithMfa(username: string, password: string, phone: string) {
      const userId = await service.createUser(username, password);
      await service.enrolSms(await service.accessToken(username, password), phone);
      await expectStatus(service.login(username, password), 200);
      const token = await service.accessToken(username, password, { mfa_code: twilio.lastCodeFor(`+${phone}`) });
      clock.advance(31);
      return { userId, username, token };
    },

    async close() {
      await app.close();
      await db.destroy();
      await twilio.close();
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return service;
}

export type Service = Awaited<ReturnType<typeof startService>>;

/** Awaits the response, throws with its body unless the status matches, and returns the parsed JSON (or undefined). */
export async function expectStatus(pending: Promise<Response>, status: number): Promise<any> {
  const response = await pending;
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

export type { FakeTwilio };
