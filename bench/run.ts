// `npm run bench [-- --sqlite | --postgres] [--duration=10] [--runs=3] [--service=other/dist/main.js] [--env=NAME=value]`:
// the service's speed next to its ceilings, each figure measured `runs` times (both databases
// interleaved) and reported as medians. `npm run bench -- --scale …`: cost against the data's
// size (bench/scale.ts). `npm run bench -- --page`: the hosted sign-in's first load alone (bench/page-load.ts).
// `npm run bench -- --tracing-ab`: (a) and (f) with tracing's code against a build without it (bench/tracing-ab.ts).
// `npm run bench -- --sign-in-steps`: the hosted sign-in's CPU step by step beside the grant's (bench/sign-in-steps.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';
import type autocannon from 'autocannon';
import { passwordHashParameters } from '../src/crypto/passwords.js';
import { startFakeTwilio } from '../test/support/fake-twilio.js';
import { freePort, SERVICE_MAIN } from '../test/support/node-process.js';
import { createTestSchema, POSTGRES_URL } from '../test/support/postgres.js';
import { SignInBrowser } from '../test/support/sign-in-browser.js';
import {
  ADMIN_TOKEN,
  authorizationRequest,
  CONNECTIONS,
  cannon,
  chargedLoop,
  type Dialect,
  exchangeCode,
  type Figures,
  forgeryOf,
  inParallel,
  json,
  median,
  PASSWORD,
  phasePeaks,
  round,
  serviceEnvironment,
  spawnServer,
  stopped,
} from './measure.js';
import { describePageLoads, measureHostedSignInLoads, type PageLoadFigures } from './page-load.js';
import { CALLBACK, CHEAP_HASH, measureSignInSteps, setEveryPasswordHash } from './sign-in-steps.js';

// libuv sizes its thread pool once, before this module runs; (e) hashes one per core at a time,
// so with more cores than libuv's default 4 threads the bench starts itself again with more.
if (availableParallelism() > 4 && process.env.UV_THREADPOOL_SIZE === undefined) {
  const env = { ...process.env, UV_THREADPOOL_SIZE: String(availableParallelism()) };
  const again = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env });
  process.exit(again.status ?? 1);
}

const argv = process.argv.join(' ');
const durationSeconds = Number(/--duration=(\d+)/.exec(argv)?.[1] ?? 10);
const runs = Number(/--runs=(\d+)/.exec(argv)?.[1] ?? 3);
/** Another build's main.js, to measure a change against the build before it (docs/PERFORMANCE.md). */
const serviceMain = /--service=(\S+)/.exec(argv)?.[1] ?? SERVICE_MAIN;
/** More of the service's environment, `--env=NAME=value` (repeatable): to measure a setting's effect. */
const extraEnv = Object.fromEntries(
  process.argv.flatMap((arg) => {
    const match = /^--env=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(arg);
    return match ? [[match[1], match[2]]] : [];
  }),
);
const PLAIN_USERS = 200;
const MFA_USERS = 300;
/** (d) The ceiling for GET /mfa/: a bare node:http server answering a fixed small JSON body, in its own process. */
async function bareNodeHttp(): Promise<Figures> {
  const port = await freePort();
  const body = JSON.stringify({ enabled: false, challenge_type: '', phone_number: '' });
  const server = await spawnServer(
    [
      '-e',
      `require('node:http').createServer((q, s) => { s.writeHead(200, {'content-type': 'application/json'}); s.end(${JSON.stringify(body)}); }).listen(${port}, '127.0.0.1')`,
    ],
    { PATH: process.env.PATH ?? '' },
    `http://127.0.0.1:${port}/`,
  );
  try {
    return await cannonFor(server.pid ?? 0, { url: `http://127.0.0.1:${port}/` });
  } finally {
    await stopped(server);
  }
}

/**
 * (e) The ceiling for the password grant: raw Argon2id verifications per second with the service's
 * parameters, by @node-rs/argon2 (the fastest maintained binding measured, docs/PERFORMANCE.md), at
 * its fastest here: one at a time per core. (32 at a time on libuv's 4 threads, as measured before
 * 2026-11-24, hashed about 9 % slower: four 19 MiB computations share two cores' caches.)
 */
async function rawArgon2(): Promise<number> {
  const hash = await argon2Hash(PASSWORD, passwordHashParameters);
  const deadline = performance.now() + durationSeconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: availableParallelism() }, async () => {
      while (performance.now() < deadline) {
        await argon2Verify(hash, PASSWORD);
        done += 1;
      }
    }),
  );
  return Math.round(done / ((performance.now() - started) / 1000));
}

/** autocannon for `durationSeconds`, charged the CPU it cost. */
function cannonFor(pid: number, options: autocannon.Options, expect: Parameters<typeof cannon>[2] = {}) {
  return cannon(pid, { duration: durationSeconds, ...options }, expect);
}

/**
 * One whole sign-in at the hosted page, as a browser and the app make it: the authorization
 * request (PKCE), answered with the page and the sign-in's state, the password, the second factor when one is
 * asked for, and the app's code exchange. Throws unless tokens come back.
 */
async function hostedSignIn(
  base: string,
  app: { client_id: string; client_secret: string },
  username: string,
  secondFactor?: () => Record<string, string>,
): Promise<void> {
  const browser = new SignInBrowser(base);
  const { url: authorize, verifier } = authorizationRequest(base, { client_id: app.client_id, redirect_uri: CALLBACK });
  // The authorization endpoint answers with the page itself, read whole.
  const opened = await browser.authorize(authorize);
  if (!('signIn' in opened)) throw new Error('no sign-in page');
  let step = await opened.signIn.password(username, PASSWORD);
  if (step.step === 'second_factor') {
    if (!secondFactor) throw new Error('a second factor was asked for');
    step = await opened.signIn.secondFactor(secondFactor());
  }
  const code = new URL(step.location ?? '').searchParams.get('code') ?? '';
  const tokens = await exchangeCode(base, { ...app, redirect_uri: CALLBACK }, code, verifier);
  if (!tokens.access_token) throw new Error('no tokens');
}

interface RunFigures {
  dialect: Dialect;
  readyMs: number;
  /** The service's peak memory in each phase: start and the plain users, the users enrolling SMS, (a) and (f), (e) and (b), (c), (g). */
  phasePeakMemoryMb: Record<string, number>;
  /** The launcher's, when the service was relaunched under it (Node 20). */
  launcherPeakMemoryMb: number;
  /** Everything `node dist/main.js` left running, the launcher too: measure.ts's phasePeaks().tree(). */
  tree: ReturnType<ReturnType<typeof phasePeaks>['tree']>;
  a_mfaStatus: Figures;
  f_forgedToken: Figures;
  b_passwordGrant: Figures;
  g_refreshGrant: Figures;
  /** (h) whole sign-ins at the hosted page (password only), with the real hash. */
  h_hostedSignIns: Figures;
  /** Around a cheap hash: (b), (h), (c) and (h) with an SMS code, CPU per login. */
  cheap: { b: Figures; h: Figures; c: Figures; hSms: Figures };
  c_smsLogins: { loginsPerSecond: number; p50Ms: number; p99Ms: number; errors: number };
  d_bareNodeHttp: [Figures, Figures];
  e_rawArgon2PerSecond: [number, number];
  /** The hosted sign-in's first load in Chromium, in English and in German. */
  pageLoads: PageLoadFigures[];
}

/** The service's peak over the whole run: its largest phase peak. */
function peakMemoryMbOfRun(run: RunFigures): number {
  return Math.max(...Object.values(run.phasePeakMemoryMb));
}

/** One boot of the service on a fresh database, every figure measured once. */
async function runOnce(dialect: Dialect): Promise<RunFigures> {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-bench-'));
  const schema = dialect === 'postgres' ? await createTestSchema() : undefined;
  const databaseUrl = schema?.databaseUrl ?? `sqlite:${join(dir, 'mfa.sqlite')}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const startedAt = performance.now();
  // As `npm start` runs it: exactly this environment (PATH and HOME aside), nothing inherited.
  const service = await spawnServer(
    [serviceMain],
    serviceEnvironment({
      port,
      databaseUrl,
      twilioUrl: twilio.url,
      extra: extraEnv,
    }),
    `${base}/mfa/`,
  );
  const readyMs = Math.round(performance.now() - startedAt);
  const pid = service.pid ?? 0;
  const memory = phasePeaks(pid);
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const token = (username: string, extra: Record<string, string> = {}) =>
    json(`${base}/mfa/oauth2/token/`, {
      method: 'POST',
      body: JSON.stringify({ grant_type: 'password', username, password: PASSWORD, ...extra }),
    });

  try {
    console.log(`${dialect}: service ready in ${readyMs} ms; creating users…`);
    const plain = await inParallel(PLAIN_USERS, 8, async (index) => {
      const username = `plain-${index}`;
      await json(`${base}/admin/users`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ username, password: PASSWORD }),
      });
      return username;
    });
    memory.phaseEnded('users');
    const mfaUsers = await inParallel(MFA_USERS, 8, async (index) => {
      const username = `mfa-${index}`;
      const phone = String(14_155_550_000 + index);
      await json(`${base}/admin/users`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ username, password: PASSWORD }),
      });
      const { access_token } = await token(username);
      const bearer = { authorization: `Bearer ${access_token}` };
      await json(`${base}/mfa/sms/request/`, {
        method: 'PUT',
        headers: bearer,
        body: JSON.stringify({ phone_number: phone }),
      });
      const code = twilio.lastCodeFor(`+${phone}`);
      await json(`${base}/mfa/sms/verify/`, {
        method: 'PUT',
        headers: bearer,
        body: JSON.stringify({ mfa_code: code }),
      });
      return { username, e164: `+${phone}` };
    });
    const { access_token: accessToken } = await token(plain[0] ?? '');

    // Each ceiling is measured just before and just after the figure it bounds: shared machines
    // change speed from minute to minute.
    memory.phaseEnded('enrolments');
    console.log('  (d) bare node:http, (a) GET /mfa/, (d) again, (f) forged tokens …');
    const bareBefore = await bareNodeHttp();
    const mfaStatus = await cannonFor(
      pid,
      { url: `${base}/mfa/`, headers: { authorization: `Bearer ${accessToken}` } },
      { dialect },
    );
    const bareAfter = await bareNodeHttp();
    const forge = forgeryOf(accessToken);
    const forged = await cannonFor(
      pid,
      {
        url: `${base}/mfa/`,
        requests: [
          {
            setupRequest: (request) => ({ ...request, headers: { authorization: `Bearer ${forge()}` } }),
          },
        ],
      },
      { expectedStatus: 401, dialect },
    );

    memory.phaseEnded('a/f');
    console.log('  (e) raw Argon2id, (b) password grant, (e) again …');
    const argon2Before = await rawArgon2();
    // The password grant for the next plain user each time, from many client addresses.
    const passwordGrantOptions = (): autocannon.Options => {
      let next = 0;
      return {
        url: `${base}/mfa/oauth2/token/`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (request) => {
              const index = next++;
              return {
                ...request,
                // Documentation addresses (RFC 5737), named in a header only.
                headers: { ...request.headers, 'x-forwarded-for': `198.51.100.${index % 250}` },
                body: JSON.stringify({
                  grant_type: 'password',
                  username: plain[index % plain.length],
                  password: PASSWORD,
                }),
              };
            },
          },
        ],
      };
    };
    const passwordGrant = await cannonFor(pid, passwordGrantOptions(), { dialect });
    // (h) whole sign-ins at the hosted page, password only, between the same two (e).
    const app = await json(`${base}/admin/clients`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'Bench app', redirect_uris: [CALLBACK] }),
    });
    const signIn = (username: string, secondFactor?: () => Record<string, string>) =>
      hostedSignIn(base, app, username, secondFactor);
    const hostedSignIns = await chargedLoop(pid, { concurrency: 16, durationSeconds, dialect }, (index) =>
      signIn(plain[index % plain.length] ?? ''),
    );
    const argon2After = await rawArgon2();

    memory.phaseEnded('b');
    console.log('  (c) complete SMS MFA logins …');
    let taken = 0;
    let completed = 0;
    let failed = 0;
    const latencies: number[] = [];
    const deadline = performance.now() + durationSeconds * 1000;
    const smsStarted = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (performance.now() < deadline && taken < mfaUsers.length) {
          const user = mfaUsers[taken++];
          if (!user) break;
          const begun = performance.now();
          try {
            const challenge = await token(user.username);
            if (!challenge.mfa_required) throw new Error('no challenge');
            const tokens = await token(user.username, { mfa_code: twilio.lastCodeFor(user.e164) });
            if (!tokens.access_token) throw new Error('no tokens');
            completed += 1;
            latencies.push(performance.now() - begun);
          } catch {
            failed += 1;
          }
        }
      }),
    );
    const smsSeconds = (performance.now() - smsStarted) / 1000;
    latencies.sort((a, b) => a - b);
    const percentile = (p: number) =>
      Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0);

    memory.phaseEnded('c');

    // Last, so that every earlier figure is measured as before (g) was added.
    console.log('  (g) refresh grant …');
    // Each request spends one refresh token and puts the one it gets back in the pool: no token is
    // presented twice (that would be reuse, and end the login). Two per connection: autocannon
    // may build a connection's first request twice.
    const refreshTokens: string[] = [];
    for (let index = 0; index < CONNECTIONS * 2; index += 1) {
      refreshTokens.push((await token(plain[index % plain.length] ?? '')).refresh_token);
    }
    const refreshGrant = await cannonFor(
      pid,
      {
        url: `${base}/mfa/oauth2/token/`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (request) => ({
              ...request,
              body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: refreshTokens.shift() }),
            }),
            onResponse: (status, body) => {
              if (status === 200) refreshTokens.push(JSON.parse(body).refresh_token);
            },
          },
        ],
      },
      { dialect },
    );

    memory.phaseEnded('g');

    // Around a cheap hash (every stored hash replaced; Argon2 verifies with the parameters in the
    // hash): what a login costs the service and the database besides its hash, by each way in.
    // Last, so that every earlier figure is measured as before. The SMS users are split in two
    // halves, each signed in once at most; (c) sent their last codes more than 30 s before.
    console.log('  around a cheap hash: (b) password grant, (h) sign-ins, (c) SMS logins, (h) SMS sign-ins …');
    await setEveryPasswordHash(databaseUrl, await argon2Hash(PASSWORD, CHEAP_HASH));
    const cheapGrant = await cannonFor(pid, passwordGrantOptions(), { dialect });
    const cheapSignIns = await chargedLoop(pid, { concurrency: 8, durationSeconds, dialect }, (index) =>
      signIn(plain[index % plain.length] ?? ''),
    );
    const half = Math.floor(mfaUsers.length / 2);
    const cheapSmsLogins = await chargedLoop(
      pid,
      { concurrency: 8, durationSeconds, dialect, limit: half },
      async (index) => {
        const user = mfaUsers[index];
        if (!user) throw new Error('no user');
        const challenge = await token(user.username);
        if (!challenge.mfa_required) throw new Error('no challenge');
        const tokens = await token(user.username, { mfa_code: twilio.lastCodeFor(user.e164) });
        if (!tokens.access_token) throw new Error('no tokens');
      },
    );
    const cheapSmsSignIns = await chargedLoop(
      pid,
      { concurrency: 8, durationSeconds, dialect, limit: mfaUsers.length - half },
      async (index) => {
        const user = mfaUsers[half + index];
        if (!user) throw new Error('no user');
        await signIn(user.username, () => ({ mfa_code: twilio.lastCodeFor(user.e164) }));
      },
    );
    memory.phaseEnded('cheap');
    // Last of all: Chromium's CPU is not the service's, but it shares the cores with it.
    console.log('  the hosted sign-in’s first load in Chromium …');
    const pageLoads = await measureHostedSignInLoads(base, { client_id: app.client_id, redirect_uri: CALLBACK });
    console.log(describePageLoads(pageLoads).replace(/^/gm, '  '));
    return {
      dialect,
      readyMs,
      phasePeakMemoryMb: memory.peaks,
      launcherPeakMemoryMb: memory.launcherPeakMb(),
      tree: memory.tree(),
      a_mfaStatus: mfaStatus,
      f_forgedToken: forged,
      b_passwordGrant: passwordGrant,
      g_refreshGrant: refreshGrant,
      h_hostedSignIns: hostedSignIns,
      cheap: { b: cheapGrant, h: cheapSignIns, c: cheapSmsLogins, hSms: cheapSmsSignIns },
      c_smsLogins: {
        loginsPerSecond: Math.round((completed / smsSeconds) * 10) / 10,
        p50Ms: percentile(0.5),
        p99Ms: percentile(0.99),
        errors: failed,
      },
      d_bareNodeHttp: [bareBefore, bareAfter],
      e_rawArgon2PerSecond: [argon2Before, argon2After],
      pageLoads,
    };
  } catch (error) {
    throw new Error(`${dialect} run failed (${String(error)}); the service's stderr: ${service.errorOutput()}`);
  } finally {
    await stopped(service);
    await twilio.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each figure's median over the runs, and the ratios taken within each run, then their median. */
function summarise(dialect: Dialect, results: RunFigures[]) {
  const med = (pick: (run: RunFigures) => number, digits = 0) => round(median(results.map(pick)), digits);
  const bare = (run: RunFigures, pick: (figures: Figures) => number) =>
    (pick(run.d_bareNodeHttp[0]) + pick(run.d_bareNodeHttp[1])) / 2;
  const argon2 = (run: RunFigures) => (run.e_rawArgon2PerSecond[0] + run.e_rawArgon2PerSecond[1]) / 2;
  const of = (pick: (run: RunFigures) => Figures) => ({
    requestsPerSecond: med((run) => pick(run).requestsPerSecond),
    cpuMicrosPerRequest: med((run) => pick(run).cpuMicrosPerRequest),
    postgresCpuMicrosPerRequest: results.every((run) => pick(run).postgresCpuMicrosPerRequest !== undefined)
      ? med((run) => pick(run).postgresCpuMicrosPerRequest ?? 0)
      : undefined,
    p50Ms: med((run) => pick(run).p50Ms),
    p99Ms: med((run) => pick(run).p99Ms),
    errors: med((run) => pick(run).errors),
  });
  return {
    dialect,
    runs: results.length,
    readyMs: med((run) => run.readyMs),
    peakMemoryMb: med(peakMemoryMbOfRun),
    maxPeakMemoryMb: Math.max(...results.map(peakMemoryMbOfRun)),
    launcherPeakMemoryMb: med((run) => run.launcherPeakMemoryMb),
    a_mfaStatus: of((run) => run.a_mfaStatus),
    f_forgedToken: of((run) => run.f_forgedToken),
    b_passwordGrant: of((run) => run.b_passwordGrant),
    g_refreshGrant: of((run) => run.g_refreshGrant),
    h_hostedSignIns: of((run) => run.h_hostedSignIns),
    cheap: {
      b: of((run) => run.cheap.b),
      h: of((run) => run.cheap.h),
      c: of((run) => run.cheap.c),
      hSms: of((run) => run.cheap.hSms),
    },
    /** Everything `node dist/main.js` leaves running (issue 33: < 160 MB): measure.ts's phasePeaks().tree(). */
    tree: {
      residentPeakMb: med((run) => run.tree.residentPeakMb),
      maxResidentPeakMb: Math.max(...results.map((run) => run.tree.residentPeakMb)),
      launcherOwnMb: med((run) => run.tree.launcherOwnMb, 1),
      residentSumMb: med((run) => run.tree.residentSumMb),
      proportionalPeakMb: med((run) => run.tree.proportionalPeakMb),
    },
    c_smsLoginsPerSecond: med((run) => run.c_smsLogins.loginsPerSecond, 1),
    c_smsLoginsErrors: med((run) => run.c_smsLogins.errors),
    d_bareNodeHttp: {
      requestsPerSecond: med((run) => bare(run, (figures) => figures.requestsPerSecond)),
      cpuMicrosPerRequest: med((run) => bare(run, (figures) => figures.cpuMicrosPerRequest)),
      p99Ms: med((run) => bare(run, (figures) => figures.p99Ms)),
    },
    e_rawArgon2PerSecond: med(argon2),
    ratios: {
      /** Service CPU per GET /mfa/ over bare node:http's (target ≤ 3.5). */
      cpuA_over_cpuD: med(
        (run) => run.a_mfaStatus.cpuMicrosPerRequest / bare(run, (figures) => figures.cpuMicrosPerRequest),
        2,
      ),
      /** Requests/s of GET /mfa/ over bare node:http's (the old yardstick, kept for comparison). */
      a_over_d: med((run) => run.a_mfaStatus.requestsPerSecond / bare(run, (figures) => figures.requestsPerSecond), 2),
      /** CPU per forged-token answer over CPU per valid GET /mfa/ (target ≤ 2). */
      cpuF_over_cpuA: med((run) => run.f_forgedToken.cpuMicrosPerRequest / run.a_mfaStatus.cpuMicrosPerRequest, 2),
      /** Password grants per second over raw Argon2id verifications per second (target ≥ 0.85). */
      b_over_e: med((run) => run.b_passwordGrant.requestsPerSecond / argon2(run), 2),
      /**
       * The most b/e could be with the cores doing nothing but logins: a raw hash's CPU (the
       * cores over e, which keeps them busy) over a login's, the service's and PostgreSQL's
       * (unknown when PostgreSQL runs elsewhere).
       */
      b_over_e_cpuBound:
        dialect === 'postgres' && results.some((run) => run.b_passwordGrant.postgresCpuMicrosPerRequest === undefined)
          ? undefined
          : med(
              (run) =>
                (availableParallelism() * 1e6) /
                argon2(run) /
                (run.b_passwordGrant.cpuMicrosPerRequest + (run.b_passwordGrant.postgresCpuMicrosPerRequest ?? 0)),
              2,
            ),
    },
    signIn: signInRatios(results),
    pageLoads: medianPageLoads(results.map((run) => run.pageLoads)),
    each: results,
  };
}

/** Each language's page-load figures over the runs: the median of the runs' medians. */
function medianPageLoads(runsFigures: PageLoadFigures[][]): PageLoadFigures[] {
  return (runsFigures[0] ?? []).map(({ language }) => {
    const ofLanguage = runsFigures.flatMap((figures) => figures.filter((figure) => figure.language === language));
    const med = (pick: (figure: PageLoadFigures) => number) => median(ofLanguage.map(pick));
    const kinds = Object.keys(ofLanguage[0]?.median.bytes ?? {}) as (keyof PageLoadFigures['median']['bytes'])[];
    return {
      language,
      loads: ofLanguage.flatMap((figure) => figure.loads),
      median: {
        bytes: Object.fromEntries(
          kinds.map((kind) => [kind, med((figure) => figure.median.bytes[kind])]),
        ) as PageLoadFigures['median']['bytes'],
        totalBytes: med((figure) => figure.median.totalBytes),
        firstContentfulPaintMs: med((figure) => figure.median.firstContentfulPaintMs),
      },
      barePageFirstPaintMs: med((figure) => figure.barePageFirstPaintMs),
      barePageWithCoopFirstPaintMs: med((figure) => figure.barePageWithCoopFirstPaintMs),
    };
  });
}

/**
 * `--page`: the hosted sign-in's first load alone, on a fresh SQLite service (the page does not
 * depend on the database), without the rest of the bench.
 */
async function pageLoadsOnly() {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const service = await spawnServer(
    [serviceMain],
    serviceEnvironment({
      port,
      databaseUrl: `sqlite:${join(dir, 'mfa.sqlite')}`,
      twilioUrl: twilio.url,
      extra: extraEnv,
    }),
    `${base}/mfa/`,
  );
  try {
    const app = await json(`${base}/admin/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: 'Bench app', redirect_uris: [CALLBACK] }),
    });
    const loads = Number(/--loads=(\d+)/.exec(argv)?.[1] ?? 5);
    const figures = await measureHostedSignInLoads(base, { client_id: app.client_id, redirect_uri: CALLBACK }, loads);
    console.log(describePageLoads(figures));
    console.log(`load average: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      'bench/results/page.json',
      `${JSON.stringify({ when: new Date().toISOString(), figures }, null, 2)}\n`,
    );
  } finally {
    await stopped(service);
    await twilio.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A login's CPU, the service's and (when it runs here) PostgreSQL's. */
const loginCpu = (figures: Figures) => figures.cpuMicrosPerRequest + (figures.postgresCpuMicrosPerRequest ?? 0);

/** The hosted sign-in's ratios, each taken within a run, then their median. */
function signInRatios(results: RunFigures[]) {
  const med = (pick: (run: RunFigures) => number) => round(median(results.map(pick)), 2);
  const argon2 = (run: RunFigures) => (run.e_rawArgon2PerSecond[0] + run.e_rawArgon2PerSecond[1]) / 2;
  const cores = availableParallelism();
  return {
    /** Sign-ins (password only) per second over raw Argon2id verifications per second (target ≥ 0.8). */
    h_over_e: med((run) => run.h_hostedSignIns.requestsPerSecond / argon2(run)),
    /**
     * What h/e would be with the cores doing nothing but the service's sign-ins (and PostgreSQL's
     * part, when it runs here): a raw hash's CPU (the cores over e) over a sign-in's; the rest of the
     * gap to h/e is the bench's own client, which signs in from the same cores.
     */
    h_over_e_cpuBound: results.some(
      (run) => run.dialect === 'postgres' && run.h_hostedSignIns.postgresCpuMicrosPerRequest === undefined,
    )
      ? undefined
      : med((run) => (cores * 1e6) / argon2(run) / loginCpu(run.h_hostedSignIns)),
    /** Around a cheap hash: a sign-in's CPU over the password grant's, service and PostgreSQL (target ≤ 1.5). */
    cheapH_over_cheapB: med((run) => loginCpu(run.cheap.h) / loginCpu(run.cheap.b)),
    /** The same with an SMS code: the sign-in's two steps over the grant's two requests. */
    cheapHsms_over_cheapC: med((run) => loginCpu(run.cheap.hSms) / loginCpu(run.cheap.c)),
    /** Beside Keycloak's sizing (15 password sign-ins/s and 120 refresh grants/s per vCPU). */
    signInsPerSecondPerCore: med((run) => run.h_hostedSignIns.requestsPerSecond / cores),
    refreshesPerSecondPerCore: med((run) => run.g_refreshGrant.requestsPerSecond / cores),
  };
}

async function postgresReachable(): Promise<boolean> {
  try {
    const schema = await createTestSchema();
    await schema.drop();
    return true;
  } catch {
    return false;
  }
}

async function main() {
  const only: Dialect | undefined = argv.includes('--postgres')
    ? 'postgres'
    : argv.includes('--sqlite')
      ? 'sqlite'
      : undefined;
  const dialects: Dialect[] = only ? [only] : ['sqlite', 'postgres'];
  if (dialects.includes('postgres') && !(await postgresReachable())) {
    if (only === 'postgres')
      throw new Error(`PostgreSQL at ${POSTGRES_URL.replace(/\/\/[^@/]*@/, '//')} cannot be reached`);
    console.log('PostgreSQL cannot be reached (TEST_POSTGRES_URL): measuring SQLite only');
    dialects.splice(dialects.indexOf('postgres'), 1);
  }
  if (!existsSync(serviceMain)) throw new Error(`${serviceMain} is missing: npm run build`);
  const results = new Map<Dialect, RunFigures[]>(dialects.map((dialect) => [dialect, []]));
  // Interleaved, so that both databases see the same machine.
  for (let run = 1; run <= runs; run += 1) {
    for (const dialect of dialects) {
      console.log(`run ${run} of ${runs}, ${dialect}`);
      const figures = await runOnce(dialect);
      results.get(dialect)?.push(figures);
      const bareCpu =
        (figures.d_bareNodeHttp[0].cpuMicrosPerRequest + figures.d_bareNodeHttp[1].cpuMicrosPerRequest) / 2;
      console.log(
        `  a ${figures.a_mfaStatus.requestsPerSecond}/s ${figures.a_mfaStatus.cpuMicrosPerRequest} µs p99 ${figures.a_mfaStatus.p99Ms} ms; ` +
          `d ${figures.d_bareNodeHttp.map((bare) => bare.requestsPerSecond).join('/')}/s ${bareCpu} µs; ` +
          `f ${figures.f_forgedToken.cpuMicrosPerRequest} µs; b ${figures.b_passwordGrant.requestsPerSecond}/s ` +
          `${figures.b_passwordGrant.cpuMicrosPerRequest} µs${dialect === 'postgres' ? ` + PostgreSQL ${figures.b_passwordGrant.postgresCpuMicrosPerRequest ?? 'n/a'} µs` : ''}; ` +
          `e ${figures.e_rawArgon2PerSecond.join('/')}/s; g ${figures.g_refreshGrant.requestsPerSecond}/s ` +
          `${figures.g_refreshGrant.cpuMicrosPerRequest} µs${dialect === 'postgres' ? ` + PostgreSQL ${figures.g_refreshGrant.postgresCpuMicrosPerRequest ?? 'n/a'} µs` : ''}; ` +
          `c ${figures.c_smsLogins.loginsPerSecond}/s; h ${figures.h_hostedSignIns.requestsPerSecond}/s ` +
          `${figures.h_hostedSignIns.cpuMicrosPerRequest} µs; cheap hash b/h/c/hSms ` +
          `${[figures.cheap.b, figures.cheap.h, figures.cheap.c, figures.cheap.hSms].map(loginCpu).join('/')} µs; ` +
          `ready ${figures.readyMs} ms; peak ${peakMemoryMbOfRun(figures)} MB (` +
          `${Object.entries(figures.phasePeakMemoryMb)
            .map(([phase, mb]) => `${phase} ${mb}`)
            .join(', ')}; launcher ${figures.launcherPeakMemoryMb}, its own ${figures.tree.launcherOwnMb}; ` +
          `the tree ${figures.tree.residentPeakMb}, resident sets added ${figures.tree.residentSumMb}, proportional ${figures.tree.proportionalPeakMb})`,
      );
    }
  }

  const summaries = dialects.map((dialect) => summarise(dialect, results.get(dialect) ?? []));
  for (const summary of summaries) {
    console.log(
      `\n${summary.dialect}: medians of ${summary.runs} runs, ${durationSeconds} s each, ${CONNECTIONS} connections`,
    );
    const row = (figures: {
      requestsPerSecond: number;
      cpuMicrosPerRequest?: number;
      postgresCpuMicrosPerRequest?: number;
      p50Ms?: number;
      p99Ms?: number;
      errors?: number;
    }) => ({
      'requests/s': figures.requestsPerSecond,
      'CPU µs/request': figures.cpuMicrosPerRequest ?? '',
      ...(summary.dialect === 'postgres'
        ? { 'PostgreSQL CPU µs/request': figures.postgresCpuMicrosPerRequest ?? '' }
        : {}),
      'p50 ms': figures.p50Ms ?? '',
      'p99 ms': figures.p99Ms ?? '',
      errors: figures.errors ?? '',
    });
    console.table({
      '(a) GET /mfa/': row(summary.a_mfaStatus),
      '(f) GET /mfa/, forged token (401)': row(summary.f_forgedToken),
      '(b) password grant': row(summary.b_passwordGrant),
      '(g) refresh grant': row(summary.g_refreshGrant),
      '(h) hosted sign-ins, password': row(summary.h_hostedSignIns),
      'cheap hash: (b) password grant': row(summary.cheap.b),
      'cheap hash: (h) hosted sign-ins': row(summary.cheap.h),
      'cheap hash: (c) SMS logins, grant': row(summary.cheap.c),
      'cheap hash: (h) SMS sign-ins': row(summary.cheap.hSms),
      '(c) SMS MFA logins': row({ requestsPerSecond: summary.c_smsLoginsPerSecond, errors: summary.c_smsLoginsErrors }),
      '(d) bare node:http': row(summary.d_bareNodeHttp),
      '(e) raw Argon2id (@node-rs/argon2)': row({ requestsPerSecond: summary.e_rawArgon2PerSecond }),
    });
    const { ratios } = summary;
    console.log(
      `CPU a/d = ${ratios.cpuA_over_cpuD} (≤ 3.5)   a p99 = ${summary.a_mfaStatus.p99Ms} ms (< 10)   ` +
        `CPU f/a = ${ratios.cpuF_over_cpuA} (≤ 2)   b/e = ${ratios.b_over_e} (≥ 0.85; CPU allows ${ratios.b_over_e_cpuBound ?? 'n/a: PostgreSQL runs elsewhere'})   ` +
        `ready ${summary.readyMs} ms (< 1000)   peak memory ${summary.peakMemoryMb} MB, at most ${summary.maxPeakMemoryMb} (< 160), ` +
        `launcher ${summary.launcherPeakMemoryMb} MB   ` +
        `(requests/s a/d = ${ratios.a_over_d})`,
    );
    const { signIn } = summary;
    console.log(
      `sign-in h/e = ${signIn.h_over_e} (≥ 0.8; CPU allows ${signIn.h_over_e_cpuBound ?? 'n/a: PostgreSQL runs elsewhere'})   cheap hash, CPU per login: sign-in/grant = ${signIn.cheapH_over_cheapB} (≤ 1.5), ` +
        `with SMS ${signIn.cheapHsms_over_cheapC}   per core: ${signIn.signInsPerSecondPerCore} sign-ins/s (Keycloak: 15), ` +
        `${signIn.refreshesPerSecondPerCore} refresh grants/s (Keycloak: 120)`,
    );
    const { tree } = summary;
    console.log(
      `everything node dist/main.js leaves running: ${tree.residentPeakMb} MB, at most ${tree.maxResidentPeakMb} (< 160; ` +
        `the service's peak and the launcher's own ${tree.launcherOwnMb} MB, Node's shared pages counted once)   ` +
        `resident sets added ${tree.residentSumMb} MB (Node's pages counted in each)   ` +
        `proportional sets added ${tree.proportionalPeakMb} MB (sampled; Node's pages shared with the host's other Node processes)`,
    );
    console.log(describePageLoads(summary.pageLoads));
  }
  const sqlite = summaries.find((summary) => summary.dialect === 'sqlite');
  const postgres = summaries.find((summary) => summary.dialect === 'postgres');
  const postgresOverSqlite =
    sqlite && postgres
      ? round(
          median(
            (results.get('postgres') ?? []).map(
              (run, index) =>
                run.a_mfaStatus.requestsPerSecond /
                (results.get('sqlite')?.[index]?.a_mfaStatus.requestsPerSecond ?? 1),
            ),
          ),
          2,
        )
      : undefined;
  if (postgresOverSqlite !== undefined) {
    console.log(`\nGET /mfa/ requests/s, PostgreSQL over SQLite in the same runs: ${postgresOverSqlite} (≥ 0.6)`);
  }
  mkdirSync('bench/results', { recursive: true });
  const figures = {
    when: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, loadAverage: readFileSync('/proc/loadavg', 'utf8').trim() },
    durationSeconds,
    connections: CONNECTIONS,
    postgresOverSqlite,
    summaries,
  };
  const file = `bench/results/${only ?? 'all'}.json`;
  writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`figures written to ${file}`);
}

// The scale mode (bench/scale.ts) seeds large databases: behind an option, as it takes far longer.
if (argv.includes('--scale')) await import('./scale.js');
else if (argv.includes('--page')) await pageLoadsOnly();
else if (argv.includes('--tracing-ab')) await import('./tracing-ab.js');
else if (argv.includes('--sign-in-steps')) await measureSignInSteps(argv);
else await main();
