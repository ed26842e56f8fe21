// What the bench's modes share: CPU time and memory read from /proc, autocannon runs charged the
// CPU they cost, the service spawned as `npm start` runs it.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { untilAnswering } from '../test/support/node-process.js';

export const CONNECTIONS = 32;
export const ADMIN_TOKEN = 'bench-admin-token-0123456789';
export const PASSWORD = 'correct horse battery';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux x86-64). */
const TICKS_PER_SECOND = 100;

export type Dialect = 'sqlite' | 'postgres';

export interface Figures {
  requestsPerSecond: number;
  /** Process CPU time (user + system) divided by the answers served, in microseconds. */
  cpuMicrosPerRequest: number;
  /** The same for the PostgreSQL server's processes, when the service runs on one on this machine. */
  postgresCpuMicrosPerRequest?: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers other than the expected status, and transport errors. */
  errors: number;
}

/** The process and its descendants (the service may re-exec itself once), from /proc. */
export function processTree(pid: number): number[] {
  const children = (() => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  })();
  return [pid, ...children.flatMap(processTree)];
}

/**
 * Every PostgreSQL server process on this machine: its backends, WAL writer and the rest share the
 * cores with the service, so the password grant's ceiling counts them too.
 */
export function postgresServerProcesses(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8') === 'postgres\n';
      } catch {
        return false; // ended meanwhile
      }
    });
}

/**
 * CPU seconds (utime + stime) the processes have used so far; with `reapedChildren`, also that of
 * their children that have ended (cutime + cstime): the PostgreSQL server starts and ends a backend
 * per connection, and the pool closes idle ones while it is measured.
 */
export function cpuSecondsOf(processes: number[], { reapedChildren = false } = {}): number {
  let ticks = 0;
  for (const member of processes) {
    try {
      // The fields after the command name, which may itself hold spaces and parentheses.
      const stat = readFileSync(`/proc/${member}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15 of stat(5)
      if (reapedChildren) ticks += Number(fields[13]) + Number(fields[14]); // cutime, cstime
    } catch {
      // ended meanwhile
    }
  }
  return ticks / TICKS_PER_SECOND;
}

/** The largest resident set (VmHWM) the process has had, in MB. */
export function peakMemoryMbOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  } catch {
    return 0; // ended meanwhile
  }
}

/**
 * A process's memory now, in MB, from /proc/<pid>/smaps_rollup: resident (as VmRSS), proportional
 * (each resident page divided by the number of processes that map it: Node's binary and libraries
 * are shared with every other Node process on the host) and its own (pages no other process maps).
 */
export function memoryOf(pid: number): { residentMb: number; proportionalMb: number; ownMb: number } {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
    return {
      residentMb: kb('Rss') / 1024,
      proportionalMb: kb('Pss') / 1024,
      ownMb: (kb('Private_Clean') + kb('Private_Dirty')) / 1024,
    };
  } catch {
    return { residentMb: 0, proportionalMb: 0, ownMb: 0 }; // ended meanwhile, or not Linux
  }
}

/** How often the tree's proportional memory is sampled: it has no high-water mark to read. */
const PROPORTIONAL_SAMPLE_MS = 500;

/**
 * The service's peak resident set phase by phase: `phaseEnded` reads the peak since the last
 * phase ended, then starts the next from the present size (writing 5 to `clear_refs` resets
 * VmHWM, Linux 4.0 and later). The run's peak is the largest. The service is the deepest process
 * of the tree: on Node 20 a launcher started it with its memory settings (src/start-settings.ts).
 *
 * Everything `node dist/main.js` leaves running (issue 33: under 160 MB) is read three ways at the
 * end (`tree()`): the service's peak plus the launcher's own memory, the tree's resident pages
 * counted once (the launcher's other pages are Node's binary and libraries, which the service maps
 * too: checked against the pages' frame numbers in /proc/<pid>/pagemap, docs/PERFORMANCE.md); the
 * peaks of their resident sets added, which counts those shared pages twice; and the highest sum of
 * their proportional sets, sampled every half second, which also divides Node's pages with every
 * other Node process on the host (the bench's own among them), so it reads low on a busy host.
 */
export function phasePeaks(pid: number) {
  const tree = processTree(pid);
  const service = tree[tree.length - 1] ?? pid;
  const launchers = tree.slice(0, -1);
  const peaks: Record<string, number> = {};
  let proportionalPeakMb = 0;
  const sample = () => {
    const sum = tree.reduce((total, member) => total + memoryOf(member).proportionalMb, 0);
    proportionalPeakMb = Math.max(proportionalPeakMb, sum);
    if (sum === 0) clearInterval(sampler); // the tree has ended
  };
  const sampler: NodeJS.Timeout = setInterval(sample, PROPORTIONAL_SAMPLE_MS).unref();
  return {
    peaks,
    phaseEnded(name: string) {
      peaks[name] = peakMemoryMbOf(service);
      try {
        writeFileSync(`/proc/${service}/clear_refs`, '5');
      } catch {
        // not Linux, or not allowed: each later phase then reads the peak so far
      }
    },
    launcherPeakMb: () => launchers.reduce((total, member) => total + peakMemoryMbOf(member), 0),
    /** Ends the sampling; read while the tree still runs, after the last phase. */
    tree() {
      sample();
      clearInterval(sampler);
      const servicePeakMb = Math.max(0, ...Object.values(peaks));
      const launcherOwnMb = launchers.reduce((total, member) => total + memoryOf(member).ownMb, 0);
      return {
        /** The service's peak and the launcher's own memory: the tree's resident pages at most, counted once. */
        residentPeakMb: Math.round(servicePeakMb + launcherOwnMb),
        launcherOwnMb: Math.round(launcherOwnMb * 10) / 10,
        /** Each process's peak resident set added (VmHWM): Node's shared pages counted in each. */
        residentSumMb: servicePeakMb + launchers.reduce((total, member) => total + peakMemoryMbOf(member), 0),
        /** The highest sum of the processes' proportional sets, sampled. */
        proportionalPeakMb: Math.round(proportionalPeakMb),
      };
    },
  };
}

/**
 * Starts charging the server whose process is `pid` the CPU it and its descendants use; with
 * `dialect` postgres, the PostgreSQL server's as well (when it runs on this machine). The returned
 * function ends the charge and divides it by the units of work done, in microseconds each.
 */
function chargeCpu(pid: number, dialect?: Dialect) {
  // None when the server runs elsewhere. Listed again at the end: backends started meanwhile count,
  // ended ones are in their parent's cutime.
  const postgresHere = dialect === 'postgres' && postgresServerProcesses().length > 0;
  const postgresCpuSeconds = () =>
    postgresHere ? cpuSecondsOf(postgresServerProcesses(), { reapedChildren: true }) : 0;
  const cpuBefore = cpuSecondsOf(processTree(pid));
  const postgresBefore = postgresCpuSeconds();
  return (units: number) => {
    const per = (seconds: number) => (units > 0 ? Math.round((seconds / units) * 1e6) : 0);
    return {
      cpuMicrosPerRequest: per(cpuSecondsOf(processTree(pid)) - cpuBefore),
      ...(postgresHere ? { postgresCpuMicrosPerRequest: per(postgresCpuSeconds() - postgresBefore) } : {}),
    };
  };
}

/**
 * Runs autocannon (CONNECTIONS connections, unless `options` say otherwise; `options.duration` in
 * seconds) against the server whose process is `pid`, charged as `chargeCpu` says.
 */
export async function cannon(
  pid: number,
  options: autocannon.Options,
  { expectedStatus = 200, dialect }: { expectedStatus?: number; dialect?: Dialect } = {},
): Promise<Figures> {
  const charged = chargeCpu(pid, dialect);
  const result = await autocannon({ connections: CONNECTIONS, ...options });
  const answered = result.requests.total;
  const unexpected =
    expectedStatus === 200 ? result.non2xx : answered - (result.statusCodeStats?.[`${expectedStatus}`]?.count ?? 0);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    ...charged(answered),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + unexpected,
  };
}

/**
 * Runs `work` (one sign-in, one login of several requests) `concurrency` at a time for
 * `durationSeconds` (or until `limit` units have begun) against the server whose process is `pid`,
 * charged as `chargeCpu` says, per completed unit. A unit that throws counts as an error, not as done.
 */
export async function chargedLoop(
  pid: number,
  {
    concurrency,
    durationSeconds,
    dialect,
    limit = Number.POSITIVE_INFINITY,
  }: { concurrency: number; durationSeconds: number; dialect?: Dialect; limit?: number },
  work: (index: number) => Promise<void>,
): Promise<Figures> {
  const charged = chargeCpu(pid, dialect);
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + durationSeconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline && next < limit) {
        const begun = performance.now();
        try {
          await work(next++);
          latencies.push(performance.now() - begun);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0);
  return {
    requestsPerSecond: round(latencies.length / seconds, 1),
    ...charged(latencies.length),
    p50Ms: percentile(0.5),
    p99Ms: percentile(0.99),
    errors,
  };
}

/** Spawns `node args…` with its output discarded and waits until `url` answers. */
export async function spawnServer(
  args: string[],
  env: Record<string, string>,
  url: string,
): Promise<ChildProcess & { errorOutput: () => string }> {
  // The service writes a log line per request: its standard output is discarded, not piped into
  // this process, so that the load generator spends nothing on it.
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  child.stderr?.on('data', (chunk) => {
    if (errors.length < 10_000) errors += chunk;
  });
  await untilAnswering(child, url, () => errors);
  return Object.assign(child, { errorOutput: () => errors });
}

export async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export async function json(url: string, init: RequestInit & { body?: string } = {}): Promise<any> {
  const response = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const body = await response.json();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** Runs `work` for `count` items with `concurrency` at a time. */
export async function inParallel<T>(
  count: number,
  concurrency: number,
  work: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        results[index] = await work(index);
      }
    }),
  );
  return results;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export const round = (value: number, digits = 0) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * The service's whole environment as the bench starts it, `npm start`'s way: exactly this (PATH
 * and HOME aside), nothing inherited; ISSUER is the address it listens on, for the hosted sign-in.
 */
export function serviceEnvironment({
  port,
  databaseUrl,
  twilioUrl,
  extra = {},
}: {
  port: number;
  databaseUrl: string;
  twilioUrl: string;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: String(port),
    ISSUER: `http://127.0.0.1:${port}`,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN,
    SECRET_KEY: 'a benchmark secret key of at least 32 characters',
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000009',
    TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-the-bench',
    TWILIO_FROM: '+15005550006',
    TWILIO_API_URL: twilioUrl,
    // Required in production; the bench sends no mail, so nothing ever connects to it.
    SMTP_URL: 'smtp://bench:bench@127.0.0.1:9',
    SMS_USER_HOURLY_LIMIT: '1000',
    SMS_NUMBER_HOURLY_LIMIT: '1000',
    SMS_GLOBAL_HOURLY_LIMIT: '10000000',
    // The users enrol 300 consecutive US numbers in one burst: what the fraud defence is made to stop.
    SMS_COUNTRY_HOURLY_LIMIT: '10000000',
    SMS_RANGE_HOURLY_LIMIT: '1000000',
    SMS_ANOMALY_FLOOR: '10000000',
    // The logins come from many clients behind a load balancer (X-Forwarded-For below): from one
    // address, 32 logins in flight would pass its throttle's 20 counted-before-judged attempts.
    TRUST_PROXY: '127.0.0.1',
    ...extra,
  };
}

/**
 * A forged access token for each request: the real token's header (a known `kid`) and claims
 * with a fresh `jti`, and 64 random bytes for a signature, so no memory of earlier failures helps.
 */
export function forgeryOf(accessToken: string): () => string {
  const [header, payload] = accessToken.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8'));
  return () =>
    `${header}.${Buffer.from(JSON.stringify({ ...claims, jti: randomUUID() })).toString('base64url')}.${randomBytes(64).toString('base64url')}`;
}

/**
 * An app's authorization request for the hosted sign-in, as a browser opens it: the code flow with
 * PKCE (S256), `openid`, a fresh state and nonce; and the verifier the code exchange needs.
 */
export function authorizationRequest(
  base: string,
  client: { client_id: string; redirect_uri: string },
): { url: URL; verifier: string } {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(`${base}/mfa/oauth2/authorize/`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: 'openid',
    state: randomUUID(),
    nonce: randomUUID(),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return { url, verifier };
}

/** The app's code exchange at the token endpoint (client_secret_basic, PKCE): the tokens it answers. */
export function exchangeCode(
  base: string,
  app: { client_id: string; client_secret: string; redirect_uri: string },
  code: string,
  verifier: string,
): Promise<any> {
  return json(`${base}/mfa/oauth2/token/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: app.redirect_uri,
      code_verifier: verifier,
    }).toString(),
  });
}
