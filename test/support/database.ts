import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database.js';
import { createTestSchema, onPostgres } from './postgres.js';

/**
 * A fresh, empty database of the pass's dialect (a SQLite file, or a PostgreSQL schema of its own),
 * for store-level tests that migrate it themselves.
 */
export async function openTestDatabase(): Promise<{ db: Kysely<Database>; close: () => Promise<void> }> {
  const schema = onPostgres ? await createTestSchema() : undefined;
  const dir = schema ? undefined : mkdtempSync(join(tmpdir(), 'mfa-store-'));
  const { db } = await openDatabase(schema?.databaseUrl ?? `sqlite:${join(dir ?? '', 'store.sqlite')}`);
  return {
    db,
    async close() {
      await db.destroy();
      await schema?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
