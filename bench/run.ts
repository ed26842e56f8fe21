// `npm run bench [-- --postgres] [--duration=10]`: the service's speed next to its ceilings, in one run.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import argon2 from 'argon2';
import autocannon from 'autocannon';
import { passwordHashParameters } from '../src/crypto/passwords.js';
import { startFakeTwilio } from '../test/support/fake-twilio.js';
import { freePort, startServiceProcess } from '../test/support/node-process.js';
import { createTestSchema } from '../test/support/postgres.js';

const dialect = process.argv.includes('--postgres') ? 'postgres' : 'sqlite';
const durationSeconds = Number(/--duration=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 10);
const CONNECTIONS = 32;
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const PASSWORD = 'correct horse battery';
const PLAIN_USERS = 200;
const MFA_USERS = 300;

interface Figures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

function figuresOf(result: autocannon.Result): Figures {
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

async function cannon(options: autocannon.Options): Promise<Figures> {
  return figuresOf(await autocannon({ connections: CONNECTIONS, duration: durationSeconds, ...options }));
}

/**
 * Runs `ceiling` for half the duration just before `measure` and half just after, so that the two
 * figures of a ratio see the same machine (shared machines change speed from minute to minute).
 */
async function besideCeiling<T, C>(measure: () => Promise<T>, ceiling: (seconds: number) => Promise<C>) {
  const before = await ceiling(durationSeconds / 2);
  const measured = await measure();
  const after = await ceiling(durationSeconds / 2);
  return { measured, ceilings: [before, after] as const };
}

async function json(url: string, init: RequestInit & { body?: string } = {}): Promise<any> {
  const response = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const body = await response.json();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** Runs `work` for `count` items with `concurrency` at a time. */
async function inParallel<T>(count: number, concurrency: number, work: (index: number) => Promise<T>): Promise<T[]> {
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

/** (d) The ceiling for GET /mfa/: a bare node:http server answering a fixed small JSON body, in its own process. */
async function bareNodeHttp(seconds: number): Promise<Figures> {
  const port = await freePort();
  const body = JSON.stringify({ enabled: false, challenge_type: '', phone_number: '' });
  const child = spawn(process.execPath, [
    '-e',
    `require('node:http').createServer((q, s) => { s.writeHead(200, {'content-type': 'application/json'}); s.end(${JSON.stringify(body)}); }).listen(${port}, '127.0.0.1')`,
  ]);
  for (;;) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  try {
    return await cannon({ url: `http://127.0.0.1:${port}/`, duration: seconds });
  } finally {
    child.kill();
  }
}

/** (e) The ceiling for the password grant: raw Argon2id verifications per second, service parameters, libuv pool. */
async function rawArgon2(seconds: number): Promise<number> {
  const hash = await argon2.hash(PASSWORD, passwordHashParameters);
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        await argon2.verify(hash, PASSWORD);
        done += 1;
      }
    }),
  );
  return Math.round(done / ((performance.now() - started) / 1000));
}

async function main() {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-bench-'));
  const schema = dialect === 'postgres' ? await createTestSchema() : undefined;
  const startedAt = performance.now();
  const service = await startServiceProcess({
    NODE_ENV: 'production',
    DATABASE_URL: schema?.databaseUrl ?? `sqlite:${join(dir, 'mfa.sqlite')}`,
    ADMIN_TOKEN,
    SECRET_KEY: 'a benchmark secret key of at least 32 characters',
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000009',
    TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-the-bench',
    TWILIO_FROM: '+15005550006',
    TWILIO_API_URL: twilio.url,
    SMS_USER_HOURLY_LIMIT: '1000',
    SMS_NUMBER_HOURLY_LIMIT: '1000',
    SMS_GLOBAL_HOURLY_LIMIT: '10000000',
    // The users enrol 300 consecutive US numbers in one burst: what the fraud defence is made to stop.
    SMS_COUNTRY_HOURLY_LIMIT: '10000000',
    SMS_RANGE_HOURLY_LIMIT: '1000000',
    SMS_ANOMALY_FLOOR: '10000000',
  });
  const readyMs = Math.round(performance.now() - startedAt);
  const base = service.url;
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

    console.log('(a) GET /mfa/, between two halves of (d) bare node:http …');
    const statusRun = await besideCeiling(
      () => cannon({ url: `${base}/mfa/`, headers: { authorization: `Bearer ${accessToken}` } }),
      bareNodeHttp,
    );
    const mfaStatus = statusRun.measured;
    const [bareBefore, bareAfter] = statusRun.ceilings;
    const bare: Figures = {
      requestsPerSecond: Math.round((bareBefore.requestsPerSecond + bareAfter.requestsPerSecond) / 2),
      p50Ms: Math.max(bareBefore.p50Ms, bareAfter.p50Ms),
      p99Ms: Math.max(bareBefore.p99Ms, bareAfter.p99Ms),
      errors: bareBefore.errors + bareAfter.errors,
    };

    console.log('(b) password grant, MFA off, over many users, between two halves of (e) raw Argon2id …');
    let next = 0;
    const grantRun = await besideCeiling(
      () =>
        cannon({
          url: `${base}/mfa/oauth2/token/`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          requests: [
            {
              setupRequest: (request) => ({
                ...request,
                body: JSON.stringify({
                  grant_type: 'password',
                  username: plain[next++ % plain.length],
                  password: PASSWORD,
                }),
              }),
            },
          ],
        }),
      rawArgon2,
    );
    const passwordGrant = grantRun.measured;
    const argon2PerSecond = Math.round((grantRun.ceilings[0] + grantRun.ceilings[1]) / 2);

    console.log('(c) complete SMS MFA logins …');
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
    const smsLogins = {
      loginsPerSecond: Math.round((completed / smsSeconds) * 10) / 10,
      p50Ms: percentile(0.5),
      p99Ms: percentile(0.99),
      errors: failed,
    };

    const peakMemoryMb = Math.round(
      Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${service.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024,
    );
    await service.stop();

    const figures = {
      dialect,
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version },
      durationSeconds,
      connections: CONNECTIONS,
      readyMs,
      peakMemoryMb,
      a_mfaStatus: mfaStatus,
      b_passwordGrant: passwordGrant,
      c_smsLogins: smsLogins,
      d_bareNodeHttp: bare,
      d_bareNodeHttpBeforeAndAfter: statusRun.ceilings.map((figures) => figures.requestsPerSecond),
      e_rawArgon2BeforeAndAfter: grantRun.ceilings,
      e_rawArgon2PerSecond: argon2PerSecond,
      ratios: {
        a_over_d: Math.round((mfaStatus.requestsPerSecond / bare.requestsPerSecond) * 100) / 100,
        b_over_e: Math.round((passwordGrant.requestsPerSecond / argon2PerSecond) * 100) / 100,
      },
    };
    console.table({
      '(a) GET /mfa/': mfaStatus,
      '(b) password grant': passwordGrant,
      '(c) SMS MFA logins': {
        requestsPerSecond: smsLogins.loginsPerSecond,
        p50Ms: smsLogins.p50Ms,
        p99Ms: smsLogins.p99Ms,
        errors: smsLogins.errors,
      },
      '(d) bare node:http': bare,
      '(e) raw Argon2id': { requestsPerSecond: argon2PerSecond },
    });
    console.log(
      `a/d = ${figures.ratios.a_over_d}   b/e = ${figures.ratios.b_over_e}   ready in ${readyMs} ms   peak memory ${peakMemoryMb} MB`,
    );
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(`bench/results/${dialect}.json`, `${JSON.stringify(figures, null, 2)}\n`);
    console.log(`figures written to bench/results/${dialect}.json`);
  } finally {
    await service.stop();
    await twilio.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
