// `npm run bench -- --sign-in-steps [--sqlite | --postgres] [--sign-ins=2000] [--against=other/dist/main.js] [--against-env=NAME=value] [--cpu-prof]`:
// the hosted sign-in's CPU step by step beside the password grant's, around a cheap hash, one
// sign-in at a time. Each sign-in is followed by one password grant for the same user, so both
// see the same minute of this shared host; with --against, a second build runs beside the first
// and the two take turns, so a change's before and after are measured in one run (--against-env:
// the second service gets that setting, on the same build unless --against names another).
// --cpu-prof: each service writes a V8 CPU profile into bench/results/profiles/ when it stops, and
// the bench writes beside it when each measured step ran.
//
// CPU is read from /proc/<pid>/task/*/schedstat (nanoseconds on the CPU, every thread of the
// service: the main thread, libuv's pool, V8's helpers), not from /proc/<pid>/stat (10 ms ticks).
// On PostgreSQL the service's own backends are charged too, found by the application_name its
// connections carry: other sessions' backends on the same server are not.
// (The hardware's instruction counters would be steadier still, but `perf stat -e instructions`
// answers <not supported> on this virtual machine.)
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash as argon2Hash } from '@node-rs/argon2';
import pg from 'pg';
import { openDatabase } from '../src/store/database.js';
import { startFakeTwilio } from '../test/support/fake-twilio.js';
import { freePort, SERVICE_MAIN } from '../test/support/node-process.js';
import { createTestSchema, POSTGRES_URL } from '../test/support/postgres.js';
import {
  ADMIN_TOKEN,
  authorizationRequest,
  type Dialect,
  exchangeCode,
  json,
  PASSWORD,
  processTree,
  serviceEnvironment,
  spawnServer,
  stopped,
} from './measure.js';

/** Argon2id at its cheapest: a stored hash made with it costs microseconds to verify. */
export const CHEAP_HASH = { memoryCost: 8, timeCost: 1, parallelism: 1 };
/** The app's redirect URI: never called, the bench reads the code from the redirect. */
export const CALLBACK = 'https://app.example.com/callback';

/** Gives every user the stored hash `passwordHash`, through a connection of the bench's own. */
export async function setEveryPasswordHash(databaseUrl: string, passwordHash: string): Promise<void> {
  const { db } = await openDatabase(databaseUrl);
  try {
    await db.updateTable('user').set({ password_hash: passwordHash }).execute();
  } finally {
    await db.destroy();
  }
}

/** Nanoseconds every thread of the process `pid` has spent on a CPU so far. */
function threadCpuNanos(pid: number): number {
  let nanos = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0; // ended
  }
  for (const task of tasks) {
    try {
      nanos += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return nanos;
}

/** The steps of one sign-in as a browser and the app make them, and the grant beside them. */
const STEPS = ['authorize', 'page', 'state', 'password', 'exchange'] as const;
type Step = (typeof STEPS)[number] | 'grant';

interface Service {
  label: string;
  base: string;
  /** The service's own process (the deepest of its tree: Node 20 starts it under a launcher). */
  pid: number;
  app: { client_id: string; client_secret: string };
  users: string[];
  /** The PostgreSQL backends serving this service, read again before each measured step. */
  backends: () => Promise<number[]>;
  /** When each measured step ran (CLOCK_MONOTONIC ns, as V8's profiles count): for --cpu-prof. */
  windows: [Step, string, string][];
  /** CPU nanoseconds per step, summed: the service's and its backends'. */
  nanos: Record<Step, { service: number; postgres: number }>;
  close: () => Promise<void>;
}

/** Boots the build `main` (with `env` added to its environment) on a fresh database with `count` users (the cheap hash) and one app. */
async function startService(
  label: string,
  main: string,
  env: Record<string, string>,
  dialect: Dialect,
  count: number,
  monitor: pg.Client | undefined,
  profile: boolean,
): Promise<Service> {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-bench-'));
  const schema = dialect === 'postgres' ? await createTestSchema() : undefined;
  const applicationName = `bench-${randomBytes(6).toString('hex')}`;
  const databaseUrl = schema
    ? `${schema.databaseUrl}&application_name=${applicationName}`
    : `sqlite:${join(dir, 'mfa.sqlite')}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = await spawnServer(
    [...(profile ? ['--cpu-prof', '--cpu-prof-dir=bench/results/profiles'] : []), main],
    serviceEnvironment({ port, databaseUrl, twilioUrl: twilio.url, extra: env }),
    `${base}/mfa/`,
  );
  const pid = processTree(child.pid ?? 0).at(-1) ?? 0;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const users: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const username = `plain-${index}`;
    await json(`${base}/admin/users`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ username, password: PASSWORD }),
    });
    users.push(username);
  }
  const app = await json(`${base}/admin/clients`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ name: 'Bench app', redirect_uris: [CALLBACK] }),
  });
  await setEveryPasswordHash(databaseUrl, await argon2Hash(PASSWORD, CHEAP_HASH));
  const zero = () => ({ service: 0, postgres: 0 });
  return {
    label,
    base,
    pid,
    app,
    users,
    backends: async () =>
      monitor
        ? (
            await monitor.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
              applicationName,
            ])
          ).rows.map((row) => row.pid)
        : [],
    windows: [],
    nanos: { authorize: zero(), page: zero(), state: zero(), password: zero(), exchange: zero(), grant: zero() },
    async close() {
      await stopped(child);
      await twilio.close();
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `work` as `step` of `service`, charging it the CPU the service and its backends used
 * meanwhile (when `counted`). The service writes its log line and metrics after the answer: a
 * millisecond's pause before the reading lets that land in the step that caused it.
 */
async function measured<T>(service: Service, step: Step, counted: boolean, work: () => Promise<T>): Promise<T> {
  const backends = await service.backends();
  const postgresNanos = () => backends.reduce((sum, backend) => sum + threadCpuNanos(backend), 0);
  const serviceBefore = threadCpuNanos(service.pid);
  const postgresBefore = postgresNanos();
  const begun = process.hrtime.bigint();
  const result = await work();
  await new Promise((resolve) => setTimeout(resolve, 1));
  if (counted) {
    service.windows.push([step, String(begun), String(process.hrtime.bigint())]);
    service.nanos[step].service += threadCpuNanos(service.pid) - serviceBefore;
    service.nanos[step].postgres += postgresNanos() - postgresBefore;
  }
  return result;
}

/** One whole sign-in in a fresh browser, step by step, then one password grant for the same user. */
async function signInThenGrant(service: Service, username: string, counted: boolean): Promise<void> {
  const { base, app } = service;
  const step = <T>(name: Step, work: () => Promise<T>) => measured(service, name, counted, work);
  const { url: authorize, verifier } = authorizationRequest(base, { client_id: app.client_id, redirect_uri: CALLBACK });
  let cookie = '';
  // Since the fifth session of round three the authorization endpoint answers with the page
  // itself; a build from before redirects to it (/sign-in/?id=…), and the page is a step of its own.
  const { redirectedTo } = await step('authorize', async () => {
    const response = await fetch(authorize, { redirect: 'manual', headers: { 'accept-encoding': 'br, gzip' } });
    await response.arrayBuffer();
    if (response.status !== 200 && response.status !== 303) {
      throw new Error(`the authorization endpoint answered ${response.status}`);
    }
    cookie = response.headers
      .getSetCookie()
      .map((header) => header.split(';')[0])
      .join('; ');
    return {
      redirectedTo: response.status === 303 ? new URL(response.headers.get('location') ?? '', base) : undefined,
    };
  });
  if (redirectedTo) {
    await step('page', async () => {
      const response = await fetch(redirectedTo, { headers: { cookie, 'accept-encoding': 'br, gzip' } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`the page answered ${response.status}`);
    });
  }
  const handedOver = decodeURIComponent(/(?:^|; )mfa-sign-in=([^;]*)/.exec(cookie)?.[1] ?? '');
  const id = redirectedTo?.searchParams.get('id') ?? handedOver.slice(0, handedOver.indexOf('.'));
  const api = `${base}/mfa/oauth2/sign-in/${id}/`;
  // As the page does: the description the authorization endpoint handed over in a cookie, when it
  // did (deleted once read), else the sign-in's state from the API.
  cookie = cookie.replace(/(?:^|; )mfa-sign-in=[^;]*/, '').replace(/^; /, '');
  const { csrf_token: csrfToken } = await step('state', async () =>
    handedOver.length > id.length + 1 && handedOver.startsWith(`${id}.`)
      ? JSON.parse(handedOver.slice(id.length + 1))
      : json(api, { headers: { cookie } }),
  );
  const { location: back } = await step('password', () =>
    json(`${api}password`, {
      method: 'POST',
      headers: { cookie, origin: base, 'x-csrf-token': csrfToken },
      body: JSON.stringify({ username, password: PASSWORD }),
    }),
  );
  const code = new URL(back).searchParams.get('code') ?? '';
  const tokens = await step('exchange', () => exchangeCode(base, { ...app, redirect_uri: CALLBACK }, code, verifier));
  if (!tokens.id_token) throw new Error('no ID token');
  const granted = await step('grant', () =>
    json(`${base}/mfa/oauth2/token/`, {
      method: 'POST',
      body: JSON.stringify({ grant_type: 'password', username, password: PASSWORD }),
    }),
  );
  if (!granted.access_token) throw new Error('no tokens from the grant');
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * Prints each build's CPU per step, and each step over that build's own grant: two processes of one
 * build differ by up to a tenth in a run on this shared host (which cores, which neighbours), and
 * a step over the grant measured in the same process cancels that. With two builds, the second's
 * over the first's, both ways.
 */
function report(services: Service[], signIns: number, dialect: Dialect): void {
  const micros = (nanos: number) => Math.round(nanos / signIns / 100) / 10;
  const total = (service: Service, steps: readonly Step[], part: 'service' | 'postgres' | 'both') =>
    steps.reduce((sum, step) => {
      const { service: own, postgres } = service.nanos[step];
      return sum + (part === 'service' ? own : part === 'postgres' ? postgres : own + postgres);
    }, 0);
  const overGrant = (service: Service, steps: readonly Step[]) =>
    total(service, steps, 'both') / total(service, ['grant'], 'both');
  const hundredths = (value: number) => Math.round(value * 100) / 100;
  const rows: Record<string, Record<string, number | string>> = {};
  const steps: [string, readonly Step[]][] = [
    ...STEPS.map((step): [string, Step[]] => [step, [step]]),
    ['whole sign-in', STEPS],
    ['password grant', ['grant']],
  ];
  for (const [name, included] of steps) {
    const row: Record<string, number | string> = Object.fromEntries(
      services.flatMap((service) => [
        [`${service.label} µs`, micros(total(service, included, 'service'))],
        ...(dialect === 'postgres'
          ? [[`${service.label} PostgreSQL µs`, micros(total(service, included, 'postgres'))]]
          : []),
        [`${service.label} ÷ grant`, hundredths(overGrant(service, included))],
      ]),
    );
    const [first, second] = services;
    if (first && second) {
      row[`${second.label}/${first.label}`] = hundredths(
        total(second, included, 'both') / total(first, included, 'both'),
      );
      row[`÷ grant, ${second.label}/${first.label}`] = hundredths(
        overGrant(second, included) / overGrant(first, included),
      );
    }
    rows[name] = row;
  }
  console.table(rows);
  for (const service of services) {
    console.log(`${service.label}: (h)/(b) around the cheap hash, CPU = ${hundredths(overGrant(service, STEPS))}`);
  }
}

/** The mode's entry: `--sign-in-steps`, with the options above. */
export async function measureSignInSteps(argv: string): Promise<void> {
  const dialect: Dialect = argv.includes('--postgres') ? 'postgres' : 'sqlite';
  const signIns = Number(/--sign-ins=(\d+)/.exec(argv)?.[1] ?? 2000);
  const warmUp = Math.min(200, signIns);
  const against = /--against=(\S+)/.exec(argv)?.[1];
  // More of the second service's environment, to measure a setting: `--against-env=NAME=value`, repeatable.
  const againstEnv = Object.fromEntries(
    argv.split(' ').flatMap((arg) => {
      const match = /^--against-env=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(arg);
      return match ? [[match[1], match[2]]] : [];
    }),
  );
  const builds: [string, string, Record<string, string>][] = [
    ['this', SERVICE_MAIN, {}],
    ...(against || Object.keys(againstEnv).length > 0
      ? [['other', against ?? SERVICE_MAIN, againstEnv] as [string, string, Record<string, string>]]
      : []),
  ];
  // Other sessions' backends are not ours: only those whose application_name names a service of this run.
  const monitor = dialect === 'postgres' ? new pg.Client({ connectionString: POSTGRES_URL }) : undefined;
  await monitor?.connect();
  const services: Service[] = [];
  try {
    for (const [label, main, env] of builds)
      services.push(await startService(label, main, env, dialect, 50, monitor, argv.includes('--cpu-prof')));
    console.log(
      `${dialect}: ${warmUp} sign-ins to warm up, then ${signIns} measured, each followed by a password grant; ` +
        `load average ${loadAverage()}`,
    );
    for (let index = 0; index < warmUp + signIns; index += 1) {
      // Turns: each build goes first every other time.
      const order = index % 2 === 0 ? services : [...services].reverse();
      for (const service of order) {
        await signInThenGrant(service, service.users[index % service.users.length] ?? '', index >= warmUp);
      }
    }
    console.log(`load average at the end ${loadAverage()}`);
    report(services, signIns, dialect);
    if (argv.includes('--cpu-prof')) {
      mkdirSync('bench/results/profiles', { recursive: true });
      for (const service of services) {
        writeFileSync(`bench/results/profiles/steps-${service.pid}.json`, JSON.stringify(service.windows));
      }
    }
  } finally {
    for (const service of services) await service.close();
    await monitor?.end();
  }
}
