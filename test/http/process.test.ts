import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { migrations } from '../../src/store/migrations/index.js';
import { freePort, SERVICE_MAIN } from '../support/node-process.js';
import { onPostgres } from '../support/postgres.js';

const ADMIN_TOKEN = 'process-test-admin-token-0123456789';
const PASSWORD = 'correct horse battery';
const START_LIMIT_MS = 30_000;
/** These processes run on SQLite files whatever the pass: once, in the SQLite pass, is enough. */
const skip = onPostgres && 'starts processes on SQLite: runs in the SQLite pass';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

interface RunningService {
  child: ChildProcess;
  cwd: string;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<Exit>;
}

const children = new Set<ChildProcess>();
const directories = new Set<string>();
const servers = new Set<Server>();

after(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await sleep(100);
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'mfa-process-'));
  directories.add(directory);
  return directory;
}

/** Starts the service as `npm start` does, in `cwd`, with only PATH, HOME, PORT and `env` in its environment. */
function startProcess(env: Record<string, string>, cwd = temporaryDirectory()): RunningService {
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? cwd,
    ...env,
  };
  const child = spawn(process.execPath, [SERVICE_MAIN], { cwd, env: fullEnv, stdio: 'pipe' });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
  });
  return {
    child,
    cwd,
    url: `http://127.0.0.1:${fullEnv.PORT}`,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
  };
}

/** Polls until the service answers HTTP; throws if it exits first or takes longer than the limit. Returns ms taken. */
async function waitUntilServing(service: RunningService): Promise<number> {
  const started = Date.now();
  let exit: Exit | undefined;
  void service.exited.then((result) => {
    exit = result;
  });
  while (Date.now() - started < START_LIMIT_MS) {
    if (exit) {
      throw new Error(`the service exited (${exit.code ?? exit.signal}) before serving:\n${service.stderr()}`);
    }
    try {
      await fetch(`${service.url}/mfa/`, { signal: AbortSignal.timeout(1000) });
      return Date.now() - started;
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`no HTTP answer within ${START_LIMIT_MS} ms:\n${service.stderr()}`);
}

/** The process's exit, or a failure after `ms`. */
async function exitWithin(service: RunningService, ms: number): Promise<Exit> {
  const cancel = new AbortController();
  const timeout = sleep(ms, undefined, { signal: cancel.signal }).then(() => {
    throw new Error(`the process did not exit within ${ms} ms:\n${service.stderr()}`);
  });
  timeout.catch(() => {});
  try {
    return await Promise.race([service.exited, timeout]);
  } finally {
    cancel.abort();
  }
}

/**
 * A request on a connection of its own that closes after the answer (`Connection: close`);
 * rejects with ECONNREFUSED once the listener is closed.
 */
function callOnNewConnection(
  url: string,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const outgoing = httpRequest(url + path, { method: init.method ?? 'GET', headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
      );
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(init.body === undefined ? undefined : JSON.stringify(init.body));
  });
}

/** The pino lines the service printed on stdout. */
function logLines(service: RunningService): { level: number; msg?: string }[] {
  return service
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

async function call(
  service: RunningService,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(service.url + path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** Creates a user through the admin API and logs in; returns an access token. */
async function userToken(service: RunningService, username: string): Promise<string> {
  const created = await call(service, '/admin/users', {
    method: 'POST',
    token: ADMIN_TOKEN,
    body: { username, password: PASSWORD },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const login = await call(service, '/mfa/oauth2/token/', {
    method: 'POST',
    body: { grant_type: 'password', username, password: PASSWORD },
  });
  assert.equal(login.status, 200, JSON.stringify(login.body));
  assert.equal(typeof login.body.access_token, 'string');
  return login.body.access_token;
}

/** A Twilio Messages API that answers 201 only after `delayMs`; records when each message came and was answered. */
async function startSlowTwilio(delayMs: number) {
  const received: { at: number; body: URLSearchParams }[] = [];
  const answeredAt: number[] = [];
  let notify: () => void = () => {};
  const firstRequest = new Promise<void>((resolve) => {
    notify = resolve;
  });
  const server = createServer(async (incoming, outgoing) => {
    let raw = '';
    for await (const chunk of incoming) raw += chunk;
    received.push({ at: Date.now(), body: new URLSearchParams(raw) });
    notify();
    setTimeout(() => {
      answeredAt.push(Date.now());
      outgoing
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ sid: `SM${received.length}`, status: 'queued' }));
    }, delayMs);
  });
  servers.add(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, answeredAt, firstRequest };
}

describe('started as npm start does, with no configuration', { skip }, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`answers HTTP within 30 s, creates ./data/mfa.sqlite, warns about SECRET_KEY, and on ${signal} exits 0`, {
      timeout: 60_000,
    }, async () => {
      const service = startProcess({ PORT: String(await freePort()) });
      const tookMs = await waitUntilServing(service);
      assert.ok(tookMs < START_LIMIT_MS, `took ${tookMs} ms`);

      const { status, body, headers } = await call(service, '/mfa/');
      assert.equal(status, 401);
      assert.match(headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(body.error, 'invalid_token');
      assert.equal(typeof body.error_description, 'string');
      assert.match(headers.get('www-authenticate') ?? '', /^Bearer /);

      const database = join(service.cwd, 'data', 'mfa.sqlite');
      assert.ok(existsSync(database), `no ${database}; the directory holds ${readdirSync(service.cwd)}`);
      assert.ok(statSync(database).size > 0);

      const warnings = logLines(service).filter((line) => line.level === 40 && /SECRET_KEY/.test(line.msg ?? ''));
      assert.equal(warnings.length, 1, `stdout:\n${service.stdout()}`);

      service.child.kill(signal);
      const exit = await exitWithin(service, 10_000);
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, service.stderr());
      // A clean close checkpoints the WAL into the database and removes it.
      assert.ok(!existsSync(`${database}-wal`), 'the database was closed before exiting');
      await assert.rejects(callOnNewConnection(service.url, '/mfa/'), { code: 'ECONNREFUSED' });
    });
  }
});

describe('the settings read only at process start', {
  skip: skip || (!existsSync('/proc/self/environ') && 'needs /proc'),
}, () => {
  /** The environment of the process that serves: the launcher's child on Node 20, the process itself after execve. */
  function servingEnvironment(service: RunningService): Map<string, string> {
    let pid = service.child.pid ?? 0;
    for (let child = childrenOf(pid)[0]; child !== undefined; child = childrenOf(pid)[0]) pid = child;
    const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
    return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
  }

  test("the service runs with its allocator settings and one thread-pool thread per core; an operator's pool size is kept", {
    timeout: 60_000,
  }, async () => {
    const plain = startProcess({ PORT: String(await freePort()) });
    const chosen = startProcess({ PORT: String(await freePort()), UV_THREADPOOL_SIZE: '3' });
    await Promise.all([waitUntilServing(plain), waitUntilServing(chosen)]);
    const plainEnvironment = servingEnvironment(plain);
    assert.equal(plainEnvironment.get('MALLOC_ARENA_MAX'), '2');
    assert.equal(plainEnvironment.get('UV_THREADPOOL_SIZE'), String(availableParallelism()));
    const chosenEnvironment = servingEnvironment(chosen);
    assert.equal(chosenEnvironment.get('MALLOC_ARENA_MAX'), '2');
    assert.equal(chosenEnvironment.get('UV_THREADPOOL_SIZE'), '3');
    for (const service of [plain, chosen]) {
      service.child.kill('SIGTERM');
      assert.equal((await exitWithin(service, 10_000)).code, 0, service.stderr());
    }
  });

  test('the launcher loads only the start settings: what dist/main.js imports before it relaunches is a few KB, the service is imported after', () => {
    // On Node 20 the first process stays as the launcher: all it loaded stays in its memory
    // (the whole bundle cost it 4 MB more: docs/PERFORMANCE.md). Static imports load first.
    const loaded = new Set<string>();
    const dist = join(SERVICE_MAIN, '..');
    const visit = (file: string) => {
      if (loaded.has(file)) return;
      loaded.add(file);
      const source = readFileSync(join(dist, file), 'utf8');
      for (const [, imported] of source.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?"\.\/([^"]+)";?$/gm)) {
        visit(imported as string);
      }
    };
    visit('main.js');
    const bytes = [...loaded].reduce((sum, file) => sum + statSync(join(dist, file)).size, 0);
    assert.ok(bytes < 16_000, `dist/main.js loads ${bytes} bytes before it relaunches: ${[...loaded].join(', ')}`);
    assert.match(readFileSync(SERVICE_MAIN, 'utf8'), /await import\("\.\/service-[\w-]+\.js"\)/);
  });
});

describe('the server bundle in dist/', () => {
  test('every script is Latin-1 text, so that V8 keeps its source at one byte a character (two otherwise)', () => {
    // One ellipsis in a comment took the app's chunk from 3.7 to 7.5 MB of heap (scripts/build.mjs).
    const dist = join(SERVICE_MAIN, '..');
    const scripts = ['.', 'cli', 'store'].flatMap((folder) =>
      readdirSync(join(dist, folder))
        .filter((name) => name.endsWith('.js'))
        .map((name) => join(folder, name)),
    );
    assert.ok(scripts.length > 3);
    const wide = scripts.filter((file) => /[\u0100-\uffff]/.test(readFileSync(join(dist, file), 'utf8')));
    assert.deepEqual(wide, []);
  });
});

describe('shutting down', { skip }, () => {
  /**
   * Starts the service on a Twilio that answers after 1 s, sends PUT /mfa/sms/request/ with `send`,
   * and sends SIGTERM about 200 ms later, while the request waits on Twilio.
   */
  async function sigtermDuringSmsRequest(
    send: (service: RunningService, token: string) => Promise<{ status: number; body: any }>,
  ) {
    const twilio = await startSlowTwilio(1000);
    const service = startProcess({
      PORT: String(await freePort()),
      ADMIN_TOKEN,
      SMS_PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000001',
      TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-tests',
      TWILIO_FROM: '+15005550006',
      TWILIO_API_URL: twilio.url,
    });
    await waitUntilServing(service);
    const token = await userToken(service, 'in-flight');

    const sentAt = Date.now();
    const pending = send(service, token);
    await twilio.firstRequest;
    await sleep(Math.max(0, 200 - (Date.now() - sentAt)));
    assert.equal(twilio.answeredAt.length, 0, 'SIGTERM goes out while the SMS request is still waiting on Twilio');
    service.child.kill('SIGTERM');
    await sleep(100);
    await assert.rejects(callOnNewConnection(service.url, '/mfa/'), { code: 'ECONNREFUSED' }, 'no new connections');

    const answer = await pending;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { enabled: false, challenge_type: '', phone_number: '14155552671' });
    assert.equal(twilio.received[0]?.body.get('To'), '+14155552671');
    return { service, answeredAt: twilio.answeredAt[0] ?? Number.POSITIVE_INFINITY };
  }

  const PUT_REQUEST = { method: 'PUT', body: { phone_number: '14155552671' } };

  test('a request in flight when SIGTERM arrives still gets its answer, new connections are refused, then exit 0', {
    timeout: 60_000,
  }, async () => {
    const { service, answeredAt } = await sigtermDuringSmsRequest((running, token) =>
      callOnNewConnection(running.url, '/mfa/sms/request/', { ...PUT_REQUEST, token }),
    );
    const exit = await exitWithin(service, 10_000);
    assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, service.stderr());
    assert.ok(exit.at >= answeredAt, 'the process waited for the request in flight');
  });

  test('once the request in flight is answered, its idle keep-alive connection does not delay the exit', {
    timeout: 60_000,
  }, async () => {
    // fetch keeps the connection open for reuse, as load balancers and API clients do.
    const { service, answeredAt } = await sigtermDuringSmsRequest((running, token) =>
      call(running, '/mfa/sms/request/', { ...PUT_REQUEST, token }),
    );
    const exit = await exitWithin(service, 10_000);
    assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, service.stderr());
    assert.ok(exit.at - answeredAt < 5000, `exited ${exit.at - answeredAt} ms after the answer`);
  });
});

describe('bad configuration stops start-up with one line naming the variable', { concurrency: 2, skip }, () => {
  const cases: [string, Record<string, string>, string][] = [
    ['SMS_PROVIDER=carrier-pigeon', { SMS_PROVIDER: 'carrier-pigeon' }, 'SMS_PROVIDER'],
    ['PORT=abc', { PORT: 'abc' }, 'PORT'],
    ['DATABASE_URL=mysql://x', { DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [
      'DATABASE_URL with a port that is not a number',
      { DATABASE_URL: 'postgres://mfa:pw@localhost:abc/mfa' },
      'DATABASE_URL',
    ],
    ['HOST that is neither an address nor a host name', { HOST: 'no such host' }, 'HOST'],
    ['NODE_ENV=production with the console SMS sink', { NODE_ENV: 'production' }, 'SMS_PROVIDER'],
    [
      'SMS_PROVIDER=twilio without TWILIO_ACCOUNT_SID',
      { SMS_PROVIDER: 'twilio', TWILIO_AUTH_TOKEN: 'twilio-auth-token', TWILIO_FROM: '+15005550006' },
      'TWILIO_ACCOUNT_SID',
    ],
    ['SMS_ALLOWED_COUNTRIES=XX', { SMS_ALLOWED_COUNTRIES: 'XX' }, 'SMS_ALLOWED_COUNTRIES'],
    [
      'NODE_ENV=production without SECRET_KEY',
      {
        NODE_ENV: 'production',
        SMS_PROVIDER: 'twilio',
        TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000001',
        TWILIO_AUTH_TOKEN: 'twilio-auth-token',
        TWILIO_FROM: '+15005550006',
      },
      'SECRET_KEY',
    ],
    ['ADMIN_TOKEN that no bearer header can carry', { ADMIN_TOKEN: 'a token with spaces in it' }, 'ADMIN_TOKEN'],
  ];
  for (const [name, env, variable] of cases) {
    test(`${name}: exit code ≠ 0, one stderr line naming ${variable}`, { timeout: 60_000 }, async () => {
      const service = startProcess({ PORT: String(await freePort()), ...env });
      const exit = await exitWithin(service, START_LIMIT_MS);
      assert.equal(exit.signal, null);
      assert.notEqual(exit.code, 0);
      assert.notEqual(exit.code, null);
      const lines = service.stderr().trimEnd().split('\n');
      assert.equal(lines.length, 1, `stderr:\n${service.stderr()}`);
      assert.ok(lines[0]?.includes(variable), `"${lines[0]}" does not name ${variable}`);
      assert.doesNotMatch(lines[0] ?? '', /\bat .+:\d+:\d+/, 'a message, not a stack trace');
      assert.ok(!existsSync(join(service.cwd, 'data')), 'no database was created');
    });
  }
});

describe('what stops start-up is said in one line, not a stack trace', { concurrency: 2, skip }, () => {
  /** Starts the service, expects it to exit at once with one stderr line matching `expected`. */
  async function expectOneLine(env: Record<string, string>, expected: RegExp, cwd?: string) {
    const service = startProcess({ PORT: String(await freePort()), ...env }, cwd);
    const exit = await exitWithin(service, START_LIMIT_MS);
    assert.notEqual(exit.code, 0);
    const lines = service.stderr().trimEnd().split('\n');
    assert.equal(lines.length, 1, `stderr:\n${service.stderr()}`);
    assert.match(lines[0] ?? '', expected);
    assert.doesNotMatch(lines[0] ?? '', /\bat .+:\d+:\d+/, 'a message, not a stack trace');
  }

  test('the port is in use', { timeout: 60_000 }, async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = String((taken.address() as AddressInfo).port);
      await expectOneLine({ PORT: port }, new RegExp(`^start-up failed: PORT ${port} .*already in use`));
    } finally {
      taken.close();
    }
  });

  test('the database cannot be reached', { timeout: 60_000 }, async () => {
    await expectOneLine(
      { DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/mfa' },
      /^start-up failed: DATABASE_URL postgres:\/\/127\.0\.0\.1:1\/mfa cannot be used/,
    );
  });

  test('HOST does not resolve', { timeout: 60_000 }, async () => {
    await expectOneLine(
      { HOST: 'nonexistent.invalid' },
      /^start-up failed: HOST nonexistent\.invalid does not resolve/,
    );
  });

  test('the SQLite file cannot be created: its folder is a file', { timeout: 60_000 }, async () => {
    const file = join(temporaryDirectory(), 'not-a-folder');
    writeFileSync(file, '');
    await expectOneLine(
      { DATABASE_URL: `sqlite:${file}/mfa.sqlite` },
      /^start-up failed: DATABASE_URL sqlite:\S+\/not-a-folder\/mfa\.sqlite cannot be used: .*; set DATABASE_URL/,
    );
  });

  test('SECRET_KEY is not the one the signing keys were sealed with', { timeout: 60_000 }, async () => {
    const cwd = temporaryDirectory();
    const first = startProcess({ PORT: String(await freePort()), SECRET_KEY: 'a'.repeat(32) }, cwd);
    await waitUntilServing(first);
    first.child.kill('SIGTERM');
    await exitWithin(first, 10_000);
    await expectOneLine({ SECRET_KEY: 'b'.repeat(32) }, /^start-up failed: .*SECRET_KEY differs/, cwd);
  });
});

/** The pid's open files, from /proc (Linux); undefined where there is no /proc. */
function openFiles(pid: number | undefined): string[] | undefined {
  if (pid === undefined || !existsSync('/proc/self/fd')) return undefined;
  try {
    const own = readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
    // The service relaunched by its launcher (src/start-settings.ts) is the launcher's child.
    return [...own, ...childrenOf(pid).flatMap((child) => openFiles(child) ?? [])];
  } catch {
    return [];
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Resolves once both processes have `file` open (then about to migrate, so waiting on the lock), plus a
 * moment; at most 3 s after the first opened it (their busy timeout is 5 s), or after 2 s without /proc.
 */
async function bothHaveOpened(services: RunningService[], file: string) {
  let firstOpenedAt: number | undefined;
  const started = Date.now();
  while (Date.now() - started < START_LIMIT_MS) {
    const opened = services.map((service) => openFiles(service.child.pid));
    if (opened.some((files) => files === undefined)) return sleep(2000);
    const count = opened.filter((files) => files?.includes(file)).length;
    if (count > 0) firstOpenedAt ??= Date.now();
    if (count === services.length) return sleep(300);
    if (firstOpenedAt !== undefined && Date.now() - firstOpenedAt > 3000) return;
    if (services.some((service) => service.child.exitCode !== null)) return;
    await sleep(20);
  }
}

describe('two processes started at the same moment on one SQLite file', { skip }, () => {
  let nodes: [RunningService, RunningService];
  let databasePath: string;

  test('both come up and serve', { timeout: 60_000 }, async () => {
    const shared = temporaryDirectory();
    databasePath = join(shared, 'shared.sqlite');
    // One issuer for the cluster, as an operator sets it: tokens name it and every node checks it.
    const env = { ADMIN_TOKEN, DATABASE_URL: `sqlite:${databasePath}`, ISSUER: 'http://mfa.cluster.test' };
    const [portA, portB] = [await freePort(), await freePort()];
    // Node start-up times differ by more than a migration takes, so the test makes the two meet: Kysely's
    // bookkeeping tables exist already (as after any earlier deploy), and the test holds the write lock
    // until both nodes have the file open. Each has then read "nothing applied" or waits for the
    // migration lock; without that lock both would run the same migration once released together.
    const gate = new SQLite(databasePath);
    gate.pragma('journal_mode = WAL');
    const bookkeeping = new Kysely<unknown>({ dialect: new SqliteDialect({ database: gate }) });
    const { error } = await new Migrator({
      db: bookkeeping,
      provider: { getMigrations: async () => ({}) },
    }).migrateToLatest();
    assert.equal(error, undefined);
    gate.exec('begin immediate');
    try {
      nodes = [startProcess({ ...env, PORT: String(portA) }), startProcess({ ...env, PORT: String(portB) })];
      await bothHaveOpened(nodes, databasePath);
    } finally {
      gate.exec('commit');
      await bookkeeping.destroy();
    }
    await Promise.all(nodes.map(waitUntilServing));
    for (const node of nodes) assert.equal((await call(node, '/mfa/')).status, 401);
  });

  test('the migration table holds each migration exactly once', () => {
    assert.ok(nodes, 'the nodes started');
    const connection = new SQLite(databasePath, { readonly: true });
    try {
      const rows = connection.prepare('select name from kysely_migration order by name').all() as { name: string }[];
      assert.deepEqual(
        rows.map((row) => row.name),
        Object.keys(migrations).sort(),
      );
    } finally {
      connection.close();
    }
  });

  test('a token issued by one node is accepted by the other, both ways', { timeout: 30_000 }, async () => {
    assert.ok(nodes, 'the nodes started');
    const [a, b] = nodes;
    const fromA = await userToken(a, 'cluster-a');
    const onB = await call(b, '/mfa/', { token: fromA });
    assert.equal(onB.status, 200, JSON.stringify(onB.body));
    assert.deepEqual(onB.body, { enabled: false, challenge_type: '', phone_number: '' });
    const fromB = await userToken(b, 'cluster-b');
    assert.equal((await call(a, '/mfa/', { token: fromB })).status, 200);
  });

  test('a code sent by one node is accepted by the other', { timeout: 30_000 }, async () => {
    assert.ok(nodes, 'the nodes started');
    const [a, b] = nodes;
    const token = await userToken(a, 'cluster-code');
    const requested = await call(a, '/mfa/sms/request/', {
      method: 'PUT',
      token,
      body: { phone_number: '14155552671' },
    });
    assert.equal(requested.status, 200, JSON.stringify(requested.body));
    // The console sink prints the message on stderr: that is its delivery channel.
    const code = /\[console SMS\] to \+14155552671: .*\b(\d{6})\b/.exec(a.stderr())?.[1];
    assert.ok(code, `no console SMS on stderr:\n${a.stderr()}`);
    const verified = await call(b, '/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assert.equal(verified.body.enabled, true);
  });

  test('both exit 0 on SIGTERM', { timeout: 30_000 }, async () => {
    assert.ok(nodes, 'the nodes started');
    for (const node of nodes) node.child.kill('SIGTERM');
    const exits = await Promise.all(nodes.map((node) => exitWithin(node, 10_000)));
    for (const exit of exits) assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
  });
});
