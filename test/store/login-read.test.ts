// A login reads the user and their verified factors in one statement (store/users.ts): these are
// the rows that statement must pick, on the pass's database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/store/database.js';
import { replacePendingFactor, verifyFactor } from '../../src/store/mfa-factors.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { findUserById, findUserByUsername, insertUser } from '../../src/store/users.js';
import { openTestDatabase } from '../support/database.js';

let db: Kysely<Database>;
let close: () => Promise<void>;
const NOW = new Date('2026-11-24T12:00:00.000Z');

before(async () => {
  ({ db, close } = await openTestDatabase());
  await migrateToLatest(db);
});
after(() => close());

async function newUser(id: string, username = id, usernameKey = username.toLowerCase()): Promise<void> {
  assert.equal(await insertUser(db, { id, username, usernameKey, passwordHash: `hash of ${id}` }, NOW), true);
}

/** Enrols a factor of `type` for the user, verified unless `pending`, created `minute` minutes after NOW. */
async function enrol(userId: string, id: string, type: string, minute: number, { pending = false } = {}) {
  const createdAt = new Date(NOW.getTime() + minute * 60_000);
  await replacePendingFactor(db, { id, userId, type, name: id, createdAt, phoneNumber: '14155550100' });
  if (!pending) assert.equal(await verifyFactor(db, id, createdAt, { isDefault: minute === 0 }), true);
}

test('the user comes with their verified factors only, oldest first, by username and by id', async () => {
  await newUser('alice');
  // Oldest first is not the order of type names (the index on user_id, type would give that).
  await enrol('alice', 'alice-sms', 'sms', 2);
  await enrol('alice', 'alice-totp', 'totp', 0);
  await enrol('alice', 'alice-webauthn', 'webauthn', 1, { pending: true });
  await newUser('bob');
  await enrol('bob', 'bob-sms', 'sms', 0);

  for (const alice of [await findUserByUsername(db, 'ALICE', 'alice'), await findUserById(db, 'alice')]) {
    assert.equal(alice?.id, 'alice');
    assert.equal(alice?.passwordHash, 'hash of alice');
    assert.deepEqual(
      alice?.factors.map((factor) => [factor.id, factor.type, factor.status, factor.isDefault]),
      [
        ['alice-totp', 'totp', 'verified', true],
        ['alice-sms', 'sms', 'verified', false],
      ],
    );
    assert.equal(alice?.factors[1]?.phoneNumber, '14155550100');
    assert.deepEqual(alice?.factors[0]?.createdAt, NOW);
  }
});

test('a user without a verified factor comes with none; an unknown one is undefined', async () => {
  await newUser('carol');
  await enrol('carol', 'carol-totp', 'totp', 0, { pending: true });
  assert.deepEqual((await findUserByUsername(db, 'carol', 'carol'))?.factors, []);
  assert.deepEqual((await findUserById(db, 'carol'))?.factors, []);
  assert.equal(await findUserByUsername(db, 'nobody', 'nobody'), undefined);
  assert.equal(await findUserById(db, 'nobody'), undefined);
});

test('of two accounts that share a folded name, the exact spelling wins, with its own factors', async () => {
  // An account from before names were folded keeps its spelling; the newer one holds the key.
  await newUser('dave-new', 'Dave', 'dave');
  await enrol('dave-new', 'dave-new-sms', 'sms', 0);
  await newUser('dave-old', 'DAVE', 'legacy:DAVE');
  await enrol('dave-old', 'dave-old-totp', 'totp', 0);

  const exact = await findUserByUsername(db, 'DAVE', 'dave');
  assert.equal(exact?.id, 'dave-old');
  assert.deepEqual(
    exact?.factors.map((factor) => factor.id),
    ['dave-old-totp'],
  );
  const folded = await findUserByUsername(db, 'dAvE', 'dave');
  assert.equal(folded?.id, 'dave-new');
  assert.deepEqual(
    folded?.factors.map((factor) => factor.id),
    ['dave-new-sms'],
  );
});
