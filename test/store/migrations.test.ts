import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { DEFAULT_MIGRATION_TABLE, type Kysely, sql } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database.js';
import { findMfaEnabledAt, listFactors } from '../../src/store/mfa-factors.js';
import { checkSchemaIsCurrent, migrateTo, migrateToLatest } from '../../src/store/migrate.js';
import { findUserByUsername, insertUser } from '../../src/store/users.js';
import { openTestDatabase } from '../support/database.js';
import { onPostgres } from '../support/postgres.js';

let db: Kysely<Database>;
let close: () => Promise<void>;
before(async () => {
  ({ db, close } = await openTestDatabase());
});
after(() => close());

describe('2026_11_23_2100_hardening on a database of the version before', () => {
  test('usernames that differ only in case keep working: the oldest takes the folded name, the others their spelling', async () => {
    await migrateTo(db, '2026_11_23_1500_backup_codes_throttle_audit');
    const legacy = db as unknown as Kysely<any>;
    const users = [
      { id: 'u-older', username: 'alice', password_hash: 'h1', created_at: '2026-01-01T00:00:00.000Z' },
      { id: 'u-newer', username: 'Alice', password_hash: 'h2', created_at: '2026-02-01T00:00:00.000Z' },
      { id: 'u-bob', username: 'Bob', password_hash: 'h3', created_at: '2026-03-01T00:00:00.000Z' },
    ];
    await legacy.insertInto('user').values(users).execute();

    await migrateToLatest(db);

    const find = async (name: string) => (await findUserByUsername(db, name, name.toLowerCase()))?.id;
    assert.equal(await find('alice'), 'u-older');
    assert.equal(await find('ALICE'), 'u-older');
    assert.equal(await find('Alice'), 'u-newer', 'the exact spelling finds the newer account');
    assert.equal(await find('bob'), 'u-bob');
    assert.equal(await find('BOB'), 'u-bob');
    const keys = await db.selectFrom('user').select(['id', 'username_key']).orderBy('id').execute();
    assert.deepEqual(keys, [
      { id: 'u-bob', username_key: 'bob' },
      { id: 'u-newer', username_key: 'alice:u-newer' },
      { id: 'u-older', username_key: 'alice' },
    ]);
  });
});

describe('2026_11_23_2200_mfa_factors on a database of the version before', () => {
  test('every SMS enrolment becomes a factor: verified ones on and the default, pending ones pending', async () => {
    const { db: legacyDb, close: closeLegacy } = await openTestDatabase();
    try {
      await migrateTo(legacyDb, '2026_11_23_2100_hardening');
      const legacy = legacyDb as unknown as Kysely<any>;
      const user = (id: string) => ({
        id,
        username: id,
        username_key: id,
        password_hash: 'h',
        created_at: '2026-01-01T00:00:00.000Z',
      });
      await legacy
        .insertInto('user')
        .values([user('u-on'), user('u-pending'), user('u-never')])
        .execute();
      await legacy
        .insertInto('mfa')
        .values([
          { user_id: 'u-on', enabled: 1, phone_number: '14155550100', enabled_at: '2026-05-01T00:00:00.000Z' },
          { user_id: 'u-pending', enabled: 0, phone_number: '14155550101', enabled_at: null },
        ])
        .execute();

      await migrateToLatest(legacyDb);

      const on = await listFactors(legacyDb, 'u-on');
      assert.equal(on.length, 1);
      assert.deepEqual(
        { type: on[0]?.type, status: on[0]?.status, isDefault: on[0]?.isDefault, phone: on[0]?.phoneNumber },
        { type: 'sms', status: 'verified', isDefault: true, phone: '14155550100' },
      );
      assert.equal(on[0]?.verifiedAt?.toISOString(), '2026-05-01T00:00:00.000Z');
      assert.equal((await findMfaEnabledAt(legacyDb, 'u-on'))?.toISOString(), '2026-05-01T00:00:00.000Z');
      const pending = await listFactors(legacyDb, 'u-pending');
      assert.deepEqual(
        pending.map((factor) => [factor.status, factor.phoneNumber]),
        [['pending', '14155550101']],
      );
      assert.equal(await findMfaEnabledAt(legacyDb, 'u-pending'), undefined);
      assert.deepEqual(await listFactors(legacyDb, 'u-never'), []);
    } finally {
      await closeLegacy();
    }
  });
});

describe('2026_11_24_1500_user_lookups on a database of the version before', () => {
  test('accounts that nodes older than 2026_11_23_2100_hardening made get their folded name (or a key of their own); one pending enrolment per type stays', async () => {
    const { db: legacyDb, close: closeLegacy } = await openTestDatabase();
    try {
      await migrateTo(legacyDb, '2026_11_24_1400_logins_in_flight');
      const legacy = legacyDb as unknown as Kysely<any>;
      const user = (id: string, username: string, usernameKey: string | null) => ({
        id,
        username,
        username_key: usernameKey,
        password_hash: 'h',
        created_at: '2026-11-24T00:00:00.000Z',
      });
      // An old node inserts without username_key.
      await legacy
        .insertInto('user')
        .values([user('u-new', 'carol', 'carol'), user('u-old-node', 'Carol', null), user('u-dave', 'Dave', null)])
        .execute();
      // Enrolments that raced before one pending factor per type was enforced.
      const pending = (id: string, createdAt: string) => ({
        id,
        user_id: 'u-dave',
        type: 'totp',
        name: 'app',
        is_default: 0,
        status: 'pending',
        created_at: createdAt,
      });
      await legacy
        .insertInto('mfa_factor')
        .values([pending('p-older', '2026-11-24T00:00:01.000Z'), pending('p-newer', '2026-11-24T00:00:02.000Z')])
        .execute();
      // Meanwhile its exact name is still taken: refused as taken (409), not as a failure.
      const again = { id: 'u-again', username: 'Dave', usernameKey: 'dave', passwordHash: 'h' };
      assert.equal(await insertUser(legacyDb, again, new Date()), false);

      await migrateToLatest(legacyDb);

      const find = async (name: string) => (await findUserByUsername(legacyDb, name, name.toLowerCase()))?.id;
      assert.equal(await find('DAVE'), 'u-dave', 'found whatever the case');
      assert.equal(await find('carol'), 'u-new');
      assert.equal(await find('Carol'), 'u-old-node', 'the exact spelling finds the account whose name was taken');
      const left = await legacyDb.selectFrom('mfa_factor').select('id').where('user_id', '=', 'u-dave').execute();
      assert.deepEqual(left, [{ id: 'p-newer' }], 'of racing pending enrolments, the newest stays');
      const keys = await legacyDb.selectFrom('user').select(['id', 'username_key']).orderBy('id').execute();
      assert.deepEqual(keys, [
        { id: 'u-dave', username_key: 'dave' },
        { id: 'u-new', username_key: 'carol' },
        { id: 'u-old-node', username_key: 'carol:u-old-node' },
      ]);
    } finally {
      await closeLegacy();
    }
  });
});

describe('a schema that a newer build migrated further', () => {
  test('this build starts on it: its own migrations have run, the newer ones are left alone', async () => {
    const { db: newerDb, close: closeNewer } = await openTestDatabase();
    try {
      await migrateToLatest(newerDb);
      await sql`insert into ${sql.table(DEFAULT_MIGRATION_TABLE)} (name, timestamp) values (${'2099_01_01_0000_newer'}, ${new Date().toISOString()})`.execute(
        newerDb,
      );
      await migrateToLatest(newerDb);
      await checkSchemaIsCurrent(newerDb);
    } finally {
      await closeNewer();
    }
  });
});

describe('migrating a SQLite file another process holds', () => {
  test("fails with SQLite's own reason, after its busy wait", { skip: onPostgres && 'SQLite only' }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mfa-locked-'));
    const file = join(dir, 'store.sqlite');
    const holder = new SQLite(file);
    const { db: lockedDb } = await openDatabase(`sqlite:${file}`);
    try {
      await migrateTo(lockedDb, '2026_11_23_0900_core'); // an older version: the next migrations wait for the lock
      holder.exec('begin immediate');
      await assert.rejects(migrateToLatest(lockedDb), /database is locked/);
    } finally {
      holder.exec('rollback');
      holder.close();
      await lockedDb.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
