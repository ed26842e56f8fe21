import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

function findUser(username: string) {
  return service.call(`/admin/users?username=${encodeURIComponent(username)}`, { token: ADMIN_TOKEN });
}

describe('usernames ignore case', () => {
  test('alice, Alice and ALICE are one account, which keeps the spelling it was made with', async () => {
    const id = await service.createUser('Case-Alice', PASSWORD);
    for (const taken of ['case-alice', 'CASE-ALICE', 'Case-Alice']) {
      const refused = await expectStatus(
        service.call('/admin/users', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { username: taken, password: PASSWORD },
        }),
        409,
      );
      assert.equal(refused.error, 'username_taken');
    }
    for (const spelling of ['case-alice', 'CASE-ALICE', 'cASE-aLICE']) {
      await expectStatus(service.login(spelling, PASSWORD), 200);
      assert.deepEqual(await expectStatus(findUser(spelling), 200), { id, username: 'Case-Alice' });
    }
  });
});

describe('the admin API finds users by name', () => {
  test('GET /admin/users?username= answers the id, or 404 naming the username', async () => {
    const id = await service.createUser('lookup-bob', PASSWORD);
    assert.deepEqual(await expectStatus(findUser('lookup-bob'), 200), { id, username: 'lookup-bob' });
    const missing = await expectStatus(findUser('lookup-nobody'), 404);
    assert.equal(missing.error, 'not_found');
    assert.match(missing.error_description, /lookup-nobody/);
    assert.equal((await expectStatus(service.call('/admin/users'), 401)).error, 'invalid_token');
    assert.equal(
      (await expectStatus(service.call('/admin/users', { token: ADMIN_TOKEN }), 400)).error,
      'invalid_request',
    );
  });
});

describe('passwords are compared in Unicode NFC', () => {
  const composed = 'caf\u00e9 au lait, no sugar'; // é as one code point
  const decomposed = 'cafe\u0301 au lait, no sugar'; // e + combining acute accent

  test('a password typed composed or decomposed is the same password', async () => {
    await service.createUser('nfc-carol', decomposed);
    await expectStatus(service.login('nfc-carol', composed), 200);
    await expectStatus(service.login('nfc-carol', decomposed), 200);
    await expectStatus(service.login('nfc-carol', 'cafe au lait, no sugar'), 400);
  });

  test('a hash made before passwords were normalised, by the earlier Argon2 binding, still verifies the password as it was typed', async () => {
    const id = await service.createUser('nfc-legacy', PASSWORD);
    // What an older version stored: Argon2id of the decomposed form as typed, made by the `argon2`
    // package that hashed passwords before @node-rs/argon2 (its parameters in its order, m,p,t).
    const legacyHash =
      '$argon2id$v=19$m=19456,p=1,t=2$YUMtTVGHcYf3YfmpKcYohQ$Z7RVBYY3CWUzdR9SViIHa3ADUzT1V2l6JE6FsFr5vtw';
    await service.execute(sql`update ${sql.table('user')} set password_hash = ${legacyHash} where id = ${id}`);
    await expectStatus(service.login('nfc-legacy', decomposed), 200);
  });
});
