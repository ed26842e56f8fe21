// The settings the SQLite connection is opened with (store/database.ts), read back from SQLite.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/database.js';
import { onPostgres } from '../support/postgres.js';

let db: Kysely<Database>;
let close: () => Promise<void>;

before(async () => {
  if (!onPostgres) ({ db, close } = await openTestDatabase());
});
after(() => close?.());

const pragma = async (name: string) =>
  Object.values((await sql.raw<Record<string, unknown>>(`pragma ${name}`).execute(db)).rows[0] ?? {})[0];

test('WAL, NORMAL sync, foreign keys and a 2 MB page cache', { skip: onPostgres && 'SQLite only' }, async () => {
  assert.equal(await pragma('journal_mode'), 'wal');
  assert.equal(await pragma('synchronous'), 1); // NORMAL
  assert.equal(await pragma('foreign_keys'), 1);
  // SQLite's own default; better-sqlite3's build would keep 16 MB of pages resident.
  assert.equal(await pragma('cache_size'), -2000);
});
