// The test passes of `npm test`: every test file on SQLite, then the store and HTTP files again on
// PostgreSQL (TEST_DATABASE=postgres, each service in a schema of its own), from the bundles of
// scripts/build-tests.mjs. Ends with one summary of both. `node scripts/run-tests.mjs sqlite` (or
// `postgres`) runs one pass. Where no PostgreSQL server answers, its pass is reported as skipped and
// passes, unless REQUIRE_POSTGRES=1 (as in CI) makes that a failure.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PASSES = {
  sqlite: { title: 'SQLite', folders: ['container', 'unit', 'store', 'http', 'browser'], env: {} },
  postgres: { title: 'PostgreSQL', folders: ['store', 'http'], env: { TEST_DATABASE: 'postgres' } },
};

const chosen = process.argv.slice(2);
const passes = chosen.length > 0 ? chosen : Object.keys(PASSES);
for (const name of passes) if (!PASSES[name]) throw new Error(`no test pass "${name}"; choose sqlite or postgres`);

const build = spawnSync(process.execPath, ['scripts/build-tests.mjs'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const results = [];
for (const name of passes) results.push(await runPass(name));

console.log('\nnpm test, all passes:');
for (const { title, outcome } of results) console.log(`  ${title.padEnd(11)} ${outcome}`);
const failures = results.flatMap((result) => result.failures);
for (const { name, file } of failures) console.log(`  ✖ ${name}  (${file.replace(/^.*\.test-build\//, '')})`);
process.exit(results.every((result) => result.passed) ? 0 : 1);

async function runPass(name) {
  const { title, folders, env } = PASSES[name];
  if (name === 'postgres') {
    const unreachable = await postgresUnreachable();
    if (unreachable) {
      const required = process.env.REQUIRE_POSTGRES === '1';
      const outcome = `SKIPPED: PostgreSQL at ${POSTGRES_URL.replace(/\/\/[^@]*@/, '//')} is unreachable (${unreachable})${
        required ? ', and REQUIRE_POSTGRES=1 makes that a failure' : ''
      }`;
      console.log(`\n${outcome}\n`);
      return { title, outcome, passed: !required, failures: [] };
    }
  }
  const files = folders.flatMap((folder) => {
    const dir = join('.test-build/test', folder);
    return readdirSync(dir)
      .filter((file) => file.endsWith('.test.mjs'))
      .map((file) => join(dir, file));
  });
  const summaryFile = `.test-build/${name}.summary.json`;
  console.log(`\n${title} pass: ${files.length} test files\n`);
  const started = performance.now();
  const run = spawnSync(
    process.execPath,
    [
      '--enable-source-maps',
      '--test',
      '--test-concurrency=4',
      '--test-timeout=300000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=./scripts/test-summary-reporter.mjs',
      `--test-reporter-destination=${summaryFile}`,
      ...files,
    ],
    { stdio: 'inherit', env: { ...process.env, ...env } },
  );
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  const { counts, failures } = readSummary(summaryFile);
  const passed = run.status === 0;
  const outcome = `${counts.pass ?? 0} passed, ${counts.fail ?? 0} failed, ${counts.skipped ?? 0} skipped${
    counts.cancelled ? `, ${counts.cancelled} cancelled` : ''
  }, ${files.length} files, ${minutes} min${passed ? '' : `: FAILED (exit ${run.status ?? run.signal})`}`;
  return { title, outcome, passed, failures };
}

function readSummary(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { counts: {}, failures: [] };
  }
}

/** Why the PostgreSQL server cannot be used, or undefined when it answers. */
async function postgresUnreachable() {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
