import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL server the suite runs against (the local one unless TEST_POSTGRES_URL says otherwise). */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** True when this test run is the PostgreSQL pass (TEST_DATABASE=postgres). */
export const onPostgres = process.env.TEST_DATABASE === 'postgres';

/**
 * Creates a schema of its own for one service (runs and test files never collide) and returns a
 * DATABASE_URL whose connections use it, with a function that drops it.
 */
export async function createTestSchema(): Promise<{ databaseUrl: string; drop: () => Promise<void> }> {
  const schema = `mfa_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return {
    databaseUrl: `${POSTGRES_URL}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    drop: () => adminQuery(`drop schema if exists ${schema} cascade`),
  };
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
