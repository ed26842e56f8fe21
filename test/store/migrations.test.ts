import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { findMfaEnabledAt, listFactors } from '../../src/store/mfa-factors.js';
import { migrateTo, migrateToLatest } from '../../src/store/migrate.js';
import { findUserByUsername } from '../../src/store/users.js';
import { openTestDatabase } from '../support/database.js';

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
