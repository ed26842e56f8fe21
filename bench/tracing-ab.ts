// `npm run bench -- --tracing-ab [--runs=3] [--duration=10] [--sqlite | --postgres]`: does tracing,
// switched off, cost anything (issue 32: "measure that the benchmark does not move")? The service
// is built twice, the same way (scripts/build.mjs's options for the service): (A) as it is, and (B)
// with src/tracing.ts replaced by bench/tracing-stub.ts, which loads no OpenTelemetry and runs a
// span's work straight away. Each run boots both on fresh databases, in alternating order, and
// measures (a) and (f) on each; the ratios B/A are taken within a run, then their median.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { startFakeTwilio } from '../test/support/fake-twilio.js';
import { freePort } from '../test/support/node-process.js';
import { createTestSchema } from '../test/support/postgres.js';
import {
  ADMIN_TOKEN,
  cannon,
  type Dialect,
  type Figures,
  forgeryOf,
  json,
  median,
  PASSWORD,
  round,
  serviceEnvironment,
  spawnServer,
  stopped,
} from './measure.js';

const argv = process.argv.join(' ');
const durationSeconds = Number(/--duration=(\d+)/.exec(argv)?.[1] ?? 10);
const runs = Number(/--runs=(\d+)/.exec(argv)?.[1] ?? 3);
const dialects: Dialect[] = argv.includes('--postgres')
  ? ['postgres']
  : argv.includes('--sqlite')
    ? ['sqlite']
    : ['sqlite', 'postgres'];

/** src/tracing.js, wherever it is imported from, resolved to the stub. */
const withoutTracing: Plugin = {
  name: 'without-tracing',
  setup(builder) {
    builder.onResolve({ filter: /(^|\/)tracing\.js$/ }, (args) =>
      resolve(args.resolveDir, args.path) === resolve('src/tracing.js')
        ? { path: resolve('bench/tracing-stub.ts') }
        : undefined,
    );
  },
};

/**
 * The service built into `<folder>/dist/main.js` with scripts/build.mjs's options, beside a
 * package.json (ESM), this checkout's node_modules (its externals) and built pages (the routes find
 * dist/ beside a package.json).
 */
async function buildService(folder: string, plugins: Plugin[]): Promise<string> {
  mkdirSync(folder, { recursive: true });
  await build({
    entryPoints: ['src/main.ts'],
    outdir: join(folder, 'dist'),
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['better-sqlite3', '@node-rs/argon2', 'pg', '@opentelemetry/*', '@fastify/otel'],
    banner: {
      js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);",
    },
    logLevel: 'warning',
    plugins,
  });
  writeFileSync(join(folder, 'package.json'), JSON.stringify({ type: 'module' }));
  symlinkSync(resolve('node_modules'), join(folder, 'node_modules'));
  return join(folder, 'dist', 'main.js');
}

interface Measured {
  a: Figures;
  f: Figures;
}

/** One boot of `main` on a fresh database: a user's token, then (a) and (f). */
async function measure(main: string, dialect: Dialect): Promise<Measured> {
  const twilio = await startFakeTwilio();
  const dir = mkdtempSync(join(tmpdir(), 'mfa-bench-'));
  const schema = dialect === 'postgres' ? await createTestSchema() : undefined;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const service = await spawnServer(
    [main],
    serviceEnvironment({
      port,
      databaseUrl: schema?.databaseUrl ?? `sqlite:${join(dir, 'mfa.sqlite')}`,
      twilioUrl: twilio.url,
    }),
    `${base}/mfa/`,
  );
  try {
    await json(`${base}/admin/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ username: 'traced', password: PASSWORD }),
    });
    const { access_token: accessToken } = await json(`${base}/mfa/oauth2/token/`, {
      method: 'POST',
      body: JSON.stringify({ grant_type: 'password', username: 'traced', password: PASSWORD }),
    });
    const pid = service.pid ?? 0;
    const a = await cannon(
      pid,
      { url: `${base}/mfa/`, duration: durationSeconds, headers: { authorization: `Bearer ${accessToken}` } },
      { dialect },
    );
    const forge = forgeryOf(accessToken);
    const f = await cannon(
      pid,
      {
        url: `${base}/mfa/`,
        duration: durationSeconds,
        requests: [{ setupRequest: (request) => ({ ...request, headers: { authorization: `Bearer ${forge()}` } }) }],
      },
      { expectedStatus: 401, dialect },
    );
    return { a, f };
  } finally {
    await stopped(service);
    await twilio.close();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cpu = (figures: Figures) => figures.cpuMicrosPerRequest + (figures.postgresCpuMicrosPerRequest ?? 0);
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const folder = mkdtempSync(join(tmpdir(), 'mfa-tracing-ab-'));
try {
  const withTracing = await buildService(join(folder, 'with'), []);
  const without = await buildService(join(folder, 'without'), [withoutTracing]);
  // The pages are not measured here, but the service warns at start without them: the same for both.
  for (const main of [withTracing, without]) {
    for (const page of ['account', 'sign-in', 'console']) symlinkSync(resolve('dist', page), join(dirname(main), page));
  }
  const lines: string[] = [];
  const results: Record<string, { ratioA: number[]; ratioF: number[]; cpuRatioA: number[]; cpuRatioF: number[] }> = {};
  for (let run = 1; run <= runs; run += 1) {
    for (const dialect of dialects) {
      // Alternating order, so that neither build always goes first on a machine warming up.
      const order = run % 2 === 1 ? ['A', 'B'] : ['B', 'A'];
      const measured: Record<string, Measured> = {};
      const before = loadAverage();
      for (const variant of order) measured[variant] = await measure(variant === 'A' ? withTracing : without, dialect);
      const { A, B } = measured as { A: Measured; B: Measured };
      results[dialect] ??= { ratioA: [], ratioF: [], cpuRatioA: [], cpuRatioF: [] };
      const entry = results[dialect];
      entry.ratioA.push(A.a.requestsPerSecond / B.a.requestsPerSecond);
      entry.ratioF.push(A.f.requestsPerSecond / B.f.requestsPerSecond);
      entry.cpuRatioA.push(cpu(A.a) / cpu(B.a));
      entry.cpuRatioF.push(cpu(A.f) / cpu(B.f));
      const line =
        `run ${run}, ${dialect} (${order.join(' then ')}; load average ${before} → ${loadAverage()}): ` +
        `(a) A ${A.a.requestsPerSecond}/s ${cpu(A.a)} µs, B ${B.a.requestsPerSecond}/s ${cpu(B.a)} µs; ` +
        `(f) A ${A.f.requestsPerSecond}/s ${cpu(A.f)} µs, B ${B.f.requestsPerSecond}/s ${cpu(B.f)} µs; ` +
        `errors ${[A.a, B.a, A.f, B.f].map((figures) => figures.errors).join('/')}`;
      console.log(line);
      lines.push(line);
    }
  }
  for (const [dialect, entry] of Object.entries(results)) {
    const med = (values: number[]) => round(median(values), 3);
    const summary =
      `${dialect}, medians of ${runs} runs, A (tracing off) over B (no tracing code): ` +
      `CPU per request (a) ${med(entry.cpuRatioA)} (${entry.cpuRatioA.map((value) => round(value, 3)).join(', ')}), ` +
      `(f) ${med(entry.cpuRatioF)} (${entry.cpuRatioF.map((value) => round(value, 3)).join(', ')}); ` +
      `requests/s (a) ${med(entry.ratioA)}, (f) ${med(entry.ratioF)}`;
    console.log(summary);
    lines.push(summary);
  }
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/tracing-ab.txt', `${new Date().toISOString()}\n${lines.join('\n')}\n`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
