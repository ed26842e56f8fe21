import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { dictionary } from '@zxcvbn-ts/language-common';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

// CONTRACT §20 over HTTP: the policy for new passwords (NIST SP 800-63B §5.1.1.2) at every place a
// password is set (the person's PUT /mfa/password/, the operator's POST /admin/users and
// POST /admin/users/{id}/password), and what a change ends.

let service: Service;
let receiver: WebhookReceiver;

before(async () => {
  service = await startService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startWebhookReceiver();
});
after(async () => {
  await service.close();
  await receiver.close();
});

const PASSWORD = `first-${randomBytes(8).toString('hex')}`;
let userCount = 0;
const nextName = (prefix: string) => `${prefix}-${++userCount}`;

/** A login's tokens (password grant, no MFA). */
async function login(username: string, password: string): Promise<{ access: string; refresh: string }> {
  const body = await expectStatus(service.login(username, password), 200);
  return { access: body.access_token, refresh: body.refresh_token };
}

function refresh(refreshToken: string) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: { grant_type: 'refresh_token', refresh_token: refreshToken },
  });
}

function changeOwnPassword(token: string, current: string, next: string) {
  return service.call('/mfa/password/', {
    method: 'PUT',
    token,
    body: { current_password: current, new_password: next },
  });
}

function setPasswordByOperator(userId: string, password: unknown, token = ADMIN_TOKEN) {
  return service.call(`/admin/users/${userId}/password`, { method: 'POST', token, body: { password } });
}

/**
 * The common-password list as the policy must hold it: zxcvbn-ts' common dictionary lower-cased,
 * each entry once, in the order `<` compares strings (UTF-16 code units).
 */
const COMMON = [...new Set(dictionary['passwords-common'].map((password) => password.toLowerCase()))].sort();
const LISTED = new Set(COMMON);

/** Awaits a 400 weak_password and returns its description. */
async function expectWeak(pending: Promise<Response>): Promise<string> {
  const body = await expectStatus(pending, 400);
  assert.equal(body.error, 'weak_password');
  return body.error_description;
}

describe('the policy for new passwords', () => {
  test('a common or breached password is 400 weak_password saying why and what to choose, in any case', async () => {
    const username = nextName('common');
    await service.createUser(username, PASSWORD);
    const { access } = await login(username, PASSWORD);
    for (const common of ['password1', 'PASSWORD1', 'Iloveyou1', 'qwertyuiop', '12345678']) {
      const description = await expectWeak(changeOwnPassword(access, PASSWORD, common));
      assert.match(description, /most common ones \(it appears in breach lists\)/, common);
      assert.match(description, /choose a longer phrase of unrelated words/);
    }
    // Nothing changed: the old password still signs in, the login that asked still works.
    await login(username, PASSWORD);
    await expectStatus(service.call('/mfa/password/', { token: access }), 200);
  });

  test('the common list is searched whole: its first, last and middle entries are refused in any case; what sorts between entries or begins one is accepted', async () => {
    const username = nextName('listed');
    const userId = await service.createUser(username, PASSWORD);
    const first = COMMON[0] ?? '';
    const last = COMMON.at(-1) ?? '';
    // Shorter than 8 characters, an entry would be refused for its length before the list is read.
    assert.ok(
      [first, last].every((entry) => [...entry].length >= 8),
      `${first}, ${last}`,
    );
    // In the middle, an entry that begins the next one ("ironmaid", "ironmaiden"), with a password
    // between them that begins the second ("ironmaide"): a search that compares prefixes or misses
    // an entry's end is caught here.
    const index = COMMON.findIndex((entry, at) => {
      const next = COMMON[at + 1] ?? '';
      return (
        at >= COMMON.length / 2 &&
        [...entry].length >= 8 &&
        next.startsWith(entry) &&
        next.length > entry.length + 1 &&
        !LISTED.has(next.slice(0, -1))
      );
    });
    const [shorter, longer] = [COMMON[index] ?? '', COMMON[index + 1] ?? ''];
    assert.ok(index > 0, 'the list has an entry that begins the next');
    const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
    for (const common of [first, last, shorter, longer, first.toUpperCase(), capitalised(last), longer.toUpperCase()]) {
      assert.match(await expectWeak(setPasswordByOperator(userId, common)), /most common ones/, common);
    }
    const beforeFirst = '!'.repeat(8);
    const between = longer.slice(0, -1);
    const afterLast = `${last}~`;
    assert.ok(beforeFirst < first && shorter < between && between < longer && last < afterLast);
    for (const uncommon of [beforeFirst, between, between.toUpperCase(), afterLast]) {
      assert.ok(!LISTED.has(uncommon.toLowerCase()), uncommon);
      assert.equal((await setPasswordByOperator(userId, uncommon)).status, 204, uncommon);
    }
  });

  test('a password that is or contains the username is refused; a short username inside a phrase is chance, not refused', async () => {
    const username = nextName('Marguerite');
    await service.createUser(username, PASSWORD);
    const { access } = await login(username, PASSWORD);
    for (const weak of [username, username.toUpperCase(), `my name is ${username.toLowerCase()}!`]) {
      assert.match(await expectWeak(changeOwnPassword(access, PASSWORD, weak)), /username/, weak);
    }
    const shortName = 'abc';
    await service.createUser(shortName, 'kettle abc orbit lantern');
    await login(shortName, 'kettle abc orbit lantern');
  });

  test('length counts characters (code points), not UTF-16 units: 8 emoji pass, 7 letters do not', async () => {
    const username = nextName('lengths');
    await service.createUser(username, PASSWORD);
    let current = PASSWORD;
    const { access } = await login(username, current);
    const short = await expectStatus(changeOwnPassword(access, current, 'abcdefg'), 400);
    assert.equal(short.error, 'invalid_request');
    assert.match(short.error_description, /8 to 1024 characters/);
    const tooLong = await expectStatus(changeOwnPassword(access, current, 'ü'.repeat(1025)), 400);
    assert.equal(tooLong.error, 'invalid_request');
    for (const next of ['🔑🌵🐙🎲🧭🪁🛶🍋', 'ü'.repeat(1024)]) {
      await expectStatus(changeOwnPassword(access, current, next), 204);
      current = next;
    }
    await login(username, current);
  });

  test('POST /admin/users refuses a weak password and creates nothing', async () => {
    const username = nextName('created');
    const common = await expectWeak(
      service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username, password: 'baseball1' } }),
    );
    assert.match(common, /common/);
    const named = await expectWeak(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username, password: `${username}-2026` },
      }),
    );
    assert.match(named, /username/);
    await expectStatus(service.call(`/admin/users?username=${username}`, { token: ADMIN_TOKEN }), 404);
    await service.createUser(username, 'quiet harbour violet engine');
  });
});

describe("the operator's POST /admin/users/{id}/password", () => {
  test('sets the password and ends every login of the user, none spared; the old password stops working', async () => {
    const username = nextName('operated');
    const userId = await service.createUser(username, PASSWORD);
    const first = await login(username, PASSWORD);
    const second = await login(username, PASSWORD);
    const next = 'granite meadow tuba seventeen';
    assert.equal((await setPasswordByOperator(userId, next)).status, 204);
    for (const { access, refresh: refreshToken } of [first, second]) {
      await expectStatus(service.call('/mfa/password/', { token: access }), 401);
      assert.equal((await expectStatus(refresh(refreshToken), 400)).error, 'invalid_grant');
    }
    assert.equal((await expectStatus(service.login(username, PASSWORD), 400)).error, 'invalid_grant');
    await login(username, next);
    const events = await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
    const changed = events.events.find((event: { type: string }) => event.type === 'password_changed');
    assert.equal(changed?.outcome, 'set_by_operator');
  });

  test('a weak password is 400 weak_password and changes nothing; an unknown user is 404; no admin token is 401', async () => {
    const username = nextName('operator-weak');
    const userId = await service.createUser(username, PASSWORD);
    const { access } = await login(username, PASSWORD);
    assert.match(await expectWeak(setPasswordByOperator(userId, 'sunshine1')), /common/);
    assert.match(await expectWeak(setPasswordByOperator(userId, username)), /username/);
    const short = await expectStatus(setPasswordByOperator(userId, 'short'), 400);
    assert.equal(short.error, 'invalid_request');
    assert.equal((await expectStatus(setPasswordByOperator(userId, 12_345_678), 400)).error, 'invalid_request');
    await expectStatus(service.call('/mfa/password/', { token: access }), 200);
    await login(username, PASSWORD);
    const unknown = '00000000-0000-4000-8000-000000000000';
    assert.equal((await expectStatus(setPasswordByOperator(unknown, 'granite meadow tuba'), 404)).error, 'not_found');
    await expectStatus(setPasswordByOperator(userId, 'granite meadow tuba', 'not-the-admin-token'), 401);
    await login(username, PASSWORD);
  });

  test('is in the OpenAPI document, with the policy in the field description', async () => {
    const document = await expectStatus(service.call('/openapi.json'), 200);
    const operation = document.paths['/admin/users/{id}/password']?.post;
    assert.ok(operation, 'POST /admin/users/{id}/password is documented');
    const schema = operation.requestBody.content['application/json'].schema;
    assert.deepEqual(schema.required, ['password']);
    assert.equal(schema.properties.password.minLength, 8);
    assert.equal(schema.properties.password.maxLength, 1024);
    assert.match(schema.properties.password.description, /weak_password/);
    assert.ok(operation.responses['204']);
  });
});

describe('password.changed webhooks (CONTRACT §20)', () => {
  test("the person's change and the operator's each send one, naming the user", async () => {
    const path = '/hooks/password';
    const endpoint = await expectStatus(
      service.call('/admin/webhooks', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { url: receiver.url + path, events: ['password.changed'] },
      }),
      201,
    );
    const username = nextName('hooked');
    const userId = await service.createUser(username, PASSWORD);
    const { access } = await login(username, PASSWORD);
    await expectStatus(changeOwnPassword(access, PASSWORD, 'violet engine quiet harbour'), 204);
    await expectStatus(setPasswordByOperator(userId, 'tuba granite seventeen meadow'), 204);
    const received = await receiver.waitFor(path, 2);
    for (const webhook of received) {
      const payload = verifyWebhook(endpoint.secret, webhook);
      assert.equal(payload.type, 'password.changed');
      assert.equal(payload.data.user_id, userId);
    }
    assert.ok(!received.some((webhook) => webhook.body.includes('harbour') || webhook.body.includes('meadow')));
  });
});
