// PostgreSQL prepares each statement the code builds once per connection (store/database.ts):
// checked on the server's own list of a connection's prepared statements.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { insertUser } from '../../src/store/users.js';
import { createTestSchema, onPostgres } from '../support/postgres.js';

describe('statements prepared once per connection', { skip: !onPostgres && 'runs in the PostgreSQL pass' }, () => {
  let db: Kysely<Database>;
  let drop: () => Promise<void>;
  const NOW = new Date('2026-11-24T12:00:00.000Z');

  before(async () => {
    const schema = await createTestSchema();
    drop = schema.drop;
    // One connection, so that every statement below runs where pg_prepared_statements is read.
    ({ db } = await openDatabase(schema.databaseUrl, { max: 1, connectionTimeoutMs: 5_000 }));
    await migrateToLatest(db);
    await insertUser(db, { id: 'u1', username: 'alice', usernameKey: 'alice', passwordHash: 'h' }, NOW);
  });
  after(async () => {
    await db.destroy();
    await drop();
  });

  const preparedTexts = async () =>
    (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map(
      (row) => row.statement,
    );

  test('a statement with parameters is prepared once and answers every time', async () => {
    const byId = (id: string) => db.selectFrom('user').select(['id', 'username']).where('id', '=', id);
    const text = byId('u1').compile().sql;
    assert.deepEqual(await byId('u1').execute(), [{ id: 'u1', username: 'alice' }]);
    assert.deepEqual(await byId('nobody').execute(), []);
    assert.deepEqual(await byId('u1').execute(), [{ id: 'u1', username: 'alice' }]);
    assert.equal((await preparedTexts()).filter((statement) => statement === text).length, 1);
  });

  test('a statement reading `*` stays unnamed, so a column added meanwhile does not break it', async () => {
    const everything = () => db.selectFrom('user').selectAll().where('id', '=', 'u1');
    const named = () => db.selectFrom('user').select(['id', 'username']).where('username', '=', 'alice');
    assert.equal((await everything().executeTakeFirst())?.id, 'u1');
    assert.equal((await named().executeTakeFirst())?.id, 'u1');
    assert.ok(!(await preparedTexts()).includes(everything().compile().sql));
    assert.ok((await preparedTexts()).includes(named().compile().sql));

    // As a newer node's migration would, during a rolling upgrade.
    await sql`alter table "user" add column added_later text`.execute(db);
    const row = (await everything().executeTakeFirst()) as Record<string, unknown> | undefined;
    assert.equal(row?.id, 'u1');
    assert.ok('added_later' in (row ?? {}));
    assert.equal((await named().executeTakeFirst())?.id, 'u1');
  });

  test('a statement whose result type a migration changed fails once, then goes unnamed', async () => {
    const hashOf = () => db.selectFrom('user').select(['id', 'password_hash']).where('id', '=', 'u1');
    assert.deepEqual(await hashOf().execute(), [{ id: 'u1', password_hash: 'h' }]);
    assert.ok((await preparedTexts()).includes(hashOf().compile().sql));

    await sql`alter table "user" alter column password_hash type varchar(1000)`.execute(db);
    await assert.rejects(hashOf().execute(), { code: '0A000' });
    assert.deepEqual(await hashOf().execute(), [{ id: 'u1', password_hash: 'h' }]);
    assert.deepEqual(await hashOf().execute(), [{ id: 'u1', password_hash: 'h' }]);
  });
});
