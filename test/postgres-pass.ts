// The PostgreSQL pass of `npm test`: the HTTP suite again, on the PostgreSQL server. Where no
// server answers it says so plainly and passes, unless REQUIRE_POSTGRES=1 (as in CI) makes it fail.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { POSTGRES_URL } from './support/postgres.js';

const where = POSTGRES_URL.replace(/\/\/[^@]*@/, '//');
const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
try {
  await client.connect();
  await client.end();
} catch (error) {
  const reason = error instanceof Error ? error.message : String(error);
  if (process.env.REQUIRE_POSTGRES === '1') {
    console.error(`PostgreSQL at ${where} is unreachable (${reason}) and REQUIRE_POSTGRES=1: failing.`);
    process.exit(1);
  }
  console.log(`\nPostgreSQL at ${where} is unreachable (${reason}): the PostgreSQL runs were SKIPPED.\n`);
  process.exit(0);
}

// The store contracts and the HTTP suite: everything that touches the database.
const files = ['test/store', 'test/http'].flatMap((folder) =>
  readdirSync(folder)
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `${folder}/${name}`),
);
console.log(`\nPostgreSQL pass (${where}): ${files.length} store and HTTP test files\n`);
const run = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=4', '--test-timeout=300000', ...files],
  {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE: 'postgres' },
  },
);
process.exit(run.status ?? 1);
