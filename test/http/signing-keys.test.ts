import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeProtectedHeader, type JWK } from 'jose';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { createTestSchema, onPostgres } from '../support/postgres.js';
import { ADMIN_TOKEN, expectStatus, type Service, startService, TestClock } from '../support/service.js';

// Services started in turn or together on one database: keys kept across restarts, one per algorithm.
const PASSWORD = 'correct horse battery';
const SECRET_KEY = 'a-secret-key-of-at-least-32-characters!';
const ALGS = ['ES256', 'EdDSA', 'RS256'];
/** Members only a private JWK has: "d" in every one, p, q, dp, dq and qi in RSA ones (RFC 7518 §6). */
const PRIVATE_MEMBER = /\\?"(d|p|q|dp|dq|qi)\\?"\s*:/;

interface SigningKeyRow {
  kid: string;
  alg: string;
  private_jwk: string;
  created_at: string;
}

/** An empty, migrated database of the pass's dialect, which services are pointed at by DATABASE_URL. */
async function createSharedDatabase() {
  const schema = onPostgres ? await createTestSchema() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'mfa-keys-'));
  const databaseUrl = schema?.databaseUrl ?? `sqlite:${join(dir, 'mfa.sqlite')}`;
  // Migrated beforehand, so that services started together only race to make keys.
  const { db } = await openDatabase(databaseUrl);
  await migrateToLatest(db);
  await db.destroy();
  return {
    databaseUrl,
    async drop() {
      await schema?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function startOn(databaseUrl: string, clock?: TestClock) {
  return startService({ env: { DATABASE_URL: databaseUrl, SECRET_KEY }, clock });
}

async function storedKeys(service: Service): Promise<SigningKeyRow[]> {
  const table = (await service.dumpDatabase()).split('\n').find((line) => line.startsWith('signing_key: '));
  assert.ok(table, 'the database has a signing_key table');
  return JSON.parse(table.slice('signing_key: '.length));
}

/** The key a node of the previous build signs access tokens with: the newest of all, whatever its alg. */
function newestOfAll(rows: SigningKeyRow[]): SigningKeyRow | undefined {
  return rows.toSorted((a, b) => b.created_at.localeCompare(a.created_at) || b.kid.localeCompare(a.kid))[0];
}

async function jwks(service: Service): Promise<JWK[]> {
  return (await expectStatus(service.call('/.well-known/jwks.json'), 200)).keys;
}

function algsOf(keys: { alg?: string }[]): string[] {
  return keys.map((key) => String(key.alg)).sort();
}

describe('signing keys kept in the database', () => {
  let shared: Awaited<ReturnType<typeof createSharedDatabase>>;
  let services: Service[] = [];
  before(async () => {
    shared = await createSharedDatabase();
  });
  after(async () => {
    await Promise.all(services.map((service) => service.close()));
    await shared.drop();
  });

  test('two services started together on one empty database settle on one key per algorithm', async () => {
    services = await Promise.all([startOn(shared.databaseUrl), startOn(shared.databaseUrl)]);
    const [first, second] = services;
    assert.ok(first && second);
    const published = await jwks(first);
    assert.deepEqual(await jwks(second), published, 'both publish the same keys');
    assert.deepEqual(algsOf(published), ALGS);
    assert.deepEqual(algsOf(await storedKeys(first)), ALGS, 'no second key of any algorithm was stored');

    await first.createUser('keys-user', PASSWORD);
    const fromFirst = await first.accessToken('keys-user', PASSWORD);
    const fromSecond = await second.accessToken('keys-user', PASSWORD);
    assert.equal(decodeProtectedHeader(fromFirst).kid, decodeProtectedHeader(fromSecond).kid);
    await expectStatus(second.call('/mfa/', { token: fromFirst }), 200);
    await expectStatus(first.call('/mfa/', { token: fromSecond }), 200);
  });

  test('with SECRET_KEY set, every private key is sealed at rest, whatever its algorithm', async () => {
    const [first] = services;
    assert.ok(first);
    const rows = await storedKeys(first);
    assert.deepEqual(algsOf(rows), ALGS);
    for (const row of rows) assert.match(row.private_jwk, /^sealed:/, `${row.alg}: sealed`);
    // The first keys are also kept as service secrets (see storeFirstKey): sealed there too.
    assert.ok(!PRIVATE_MEMBER.test(await first.dumpDatabase()), 'a private JWK member is in the database');
  });

  test('keys survive a restart: the same kids are published, sign, and verify tokens signed before', async () => {
    const [first] = services;
    assert.ok(first);
    const published = await jwks(first);
    const token = await first.accessToken('keys-user', PASSWORD);
    await Promise.all(services.map((service) => service.close()));
    services = [];

    const restarted = await startOn(shared.databaseUrl);
    services = [restarted];
    assert.deepEqual(await jwks(restarted), published);
    await expectStatus(restarted.call('/mfa/', { token }), 200);
    const again = await restarted.accessToken('keys-user', PASSWORD);
    assert.equal(decodeProtectedHeader(again).kid, decodeProtectedHeader(token).kid);
  });
});

describe('the newest key of all is always an EdDSA one (what the previous build signs access tokens with)', () => {
  let shared: Awaited<ReturnType<typeof createSharedDatabase>>;
  let service: Service | undefined;
  before(async () => {
    shared = await createSharedDatabase();
  });
  after(async () => {
    await service?.close();
    await shared.drop();
  });

  test('on a database holding only an EdDSA key, as the previous build left it, the new keys are dated before it', async () => {
    const older = await startOn(shared.databaseUrl);
    const accessTokenKid = (await jwks(older)).find((key) => key.alg === 'EdDSA')?.kid;
    await older.execute(sql`delete from signing_key where alg <> 'EdDSA'`);
    await older.execute(sql`delete from service_secret where name like 'first-signing-key-%'`);
    await older.close();

    // A day later, so that keys dated "now" would be the newest.
    service = await startOn(shared.databaseUrl, new TestClock(Date.now() + 86_400_000));
    const rows = await storedKeys(service);
    assert.deepEqual(algsOf(rows), ALGS);
    assert.equal(newestOfAll(rows)?.kid, accessTokenKid);
    assert.equal((await jwks(service)).find((key) => key.alg === 'EdDSA')?.kid, accessTokenKid, 'the EdDSA key kept');
  });

  test('after each rotation, the newest of all is the new EdDSA key', async () => {
    assert.ok(service);
    for (let round = 0; round < 3; round++) {
      const { kid } = await expectStatus(
        service.call('/admin/signing-keys', { method: 'POST', token: ADMIN_TOKEN }),
        201,
      );
      const rows = await storedKeys(service);
      assert.equal(rows.length, 3 * (round + 2), 'one new key per algorithm');
      assert.equal(newestOfAll(rows)?.kid, kid, `round ${round}`);
      assert.equal(newestOfAll(rows)?.alg, 'EdDSA');
    }
  });
});
