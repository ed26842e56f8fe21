import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import * as OTPAuth from 'otpauth';
import { createMailUserWithSms } from '../support/mail-users.js';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';

// CONTRACT §20, security notices over HTTP: each change to an account with a verified address is
// mailed (read from this process's SMTP server) saying what, when, from which address and
// browser, and what to do if it was not them, in the request's language, and never a secret.

const PASSWORD = 'correct horse battery';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';

let smtp: SmtpTestServer;
let service: Service;

before(async () => {
  smtp = await startSmtpServer();
  service = await startService({ env: { SMTP_URL: smtp.url, SERVICE_NAME: 'Acme' } });
});
after(async () => {
  await service.close();
  await smtp.close();
});

let userCount = 0;
/** A user whose address an operator gave (so it counts at once), with SMS as the second factor. */
function userWithSms(prefix: string, headers: Record<string, string> = {}) {
  return createMailUserWithSms(service, `${prefix}-${++userCount}`, PASSWORD, { headers });
}

/** A fresh login with the SMS code: what sensitive calls ask for. */
async function signInWithSms(user: { username: string; phone: string }) {
  await expectStatus(service.login(user.username, PASSWORD), 200);
  const token = await service.accessToken(user.username, PASSWORD, {
    mfa_code: service.twilio.lastCodeFor(`+${user.phone}`),
  });
  service.clock.advance(31);
  return token;
}

describe('security notices by email', () => {
  test('a factor added: what happened, when, from which address and browser, and what to do if it was not them', async () => {
    const user = await userWithSms('added', { 'user-agent': FIREFOX });
    const mail = await smtp.waitForMail(user.email, /a second factor was added/);
    assert.equal(mail.subject, 'Acme: a second factor was added to your account');
    assert.match(mail.text, /^A second factor was added to your Acme account\.$/m);
    assert.match(mail.text, new RegExp(`^When: .*${new Date().getUTCFullYear()}.* UTC$`, 'm'));
    assert.match(mail.text, /^From: address 127\.0\.0\.1, Firefox 121 on Linux$/m);
    assert.ok(mail.text.includes(`change it at once at ${service.config.issuer}/account/`), mail.text);
    assert.ok(!mail.raw.includes(user.smsCode), 'not the code that proved the phone');
    assert.ok(!mail.raw.includes(user.phone.slice(-7)), 'not the phone number');
  });

  test('backup codes created and used, a factor removed, the password changed and MFA off are each told once', async () => {
    const user = await userWithSms('changes');
    let token = await signInWithSms(user);
    const { backup_codes: codes } = await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token }), 200);
    const created = await smtp.waitForMail(user.email, /new backup codes/);
    for (const code of codes as string[]) assert.ok(!created.raw.includes(code), 'no backup code in the notice');

    await expectStatus(service.login(user.username, PASSWORD, { backup_code: codes[0] }), 200);
    const used = await smtp.waitForMail(user.email, /a backup code was used/);
    assert.ok(!used.raw.includes(codes[0]));

    // A second factor (an authenticator app), then its removal.
    token = await signInWithSms(user);
    const start = await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);
    const app = OTPAuth.URI.parse(start.otpauth_uri) as OTPAuth.TOTP;
    const totpCode = app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(service.call('/mfa/totp/verify/', { method: 'PUT', token, body: { mfa_code: totpCode } }), 200);
    token = await signInWithSms(user);
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    const totp = factors.find((factor: { type: string }) => factor.type === 'totp');
    await expectStatus(service.call(`/mfa/factors/${totp.id}/`, { method: 'DELETE', token }), 204);
    const removed = await smtp.waitForMail(user.email, /a second factor was removed/);
    assert.ok(!removed.raw.includes(start.secret), 'no factor secret');

    token = await signInWithSms(user);
    const newPassword = 'a brand new passphrase 42';
    await expectStatus(
      service.call('/mfa/password/', {
        method: 'PUT',
        token,
        body: { current_password: PASSWORD, new_password: newPassword },
      }),
      204,
    );
    const changed = await smtp.waitForMail(user.email, /your password was changed/);
    assert.ok(!changed.raw.includes(newPassword) && !changed.raw.includes(PASSWORD), 'no password');

    await expectStatus(service.call('/mfa/', { method: 'DELETE', token }), 204);
    await smtp.waitForMail(user.email, /two-step sign-in was turned off/);

    const kinds = await service.rows(
      sql<{ kind: string }>`select kind from outbox_message where user_id = ${user.userId}`,
    );
    // Sorted: changes made within one tick of the test clock share their time.
    assert.deepEqual(
      kinds.map((row) => row.kind).sort(),
      [
        'notice.factor_added',
        'notice.backup_codes_created',
        'notice.backup_code_used',
        'notice.factor_added',
        'notice.factor_removed',
        'notice.password_changed',
        'notice.mfa_disabled',
      ].sort(),
    );
  });

  test('sign-ins throttled, by password or by second factor, are told to the owner of the account', async () => {
    const user = await userWithSms('throttled');
    let answer: Response;
    do answer = await service.login(user.username, 'not the password');
    while (answer.status !== 429);
    const mail = await smtp.waitForMail(user.email, /sign-ins to your account were paused/);
    assert.match(mail.text, /someone is guessing at your account/);
    service.clock.advance(16 * 60);

    const other = await userWithSms('guessed');
    await expectStatus(service.login(other.username, PASSWORD), 200);
    const right = service.twilio.lastCodeFor(`+${other.phone}`);
    const wrong = right === '000000' ? '111111' : '000000';
    do answer = await service.login(other.username, PASSWORD, { mfa_code: wrong });
    while (answer.status !== 429);
    await smtp.waitForMail(other.email, /sign-ins to your account were paused/);
  });

  test('a username blocked again and again is told once a day; an address blocked is told to no one', async () => {
    const user = await userWithSms('blocked-often');
    const throttleNotices = async () =>
      (
        await service.rows<{ kind: string }>(
          sql`select kind from outbox_message where user_id = ${user.userId} and kind = 'notice.sign_in_throttled'`,
        )
      ).length;
    /** Guesses until the username is blocked, then lets the block pass. */
    async function block() {
      let answer: Response;
      do answer = await service.login(user.username, 'not the password');
      while (answer.status !== 429);
      service.clock.advance(Number(answer.headers.get('retry-after')));
    }
    for (let round = 0; round < 4; round += 1) await block();
    assert.equal(await throttleNotices(), 1, 'four blocks in a few minutes, one notice');
    service.clock.advance(24 * 3600);
    await block();
    assert.equal(await throttleNotices(), 2, 'a day later, told again');
    service.clock.advance(16 * 60);

    // Twenty wrong passwords for other names block this client's address: a request naming the
    // user is refused by that block, and the user is not told their sign-ins were paused.
    const named = await userWithSms('address-blocked');
    let answer: Response;
    let other = 0;
    do answer = await service.login(`nobody-${++other}`, 'not the password');
    while (answer.status !== 429);
    assert.equal((await service.login(named.username, 'not the password')).status, 429);
    const notices = await service.rows(
      sql`select kind from outbox_message where user_id = ${named.userId} and kind = 'notice.sign_in_throttled'`,
    );
    assert.deepEqual(notices, []);
    service.clock.advance(16 * 60);
  });

  test('in the language of the request that made the change', async () => {
    const user = await userWithSms('deutsch', { 'accept-language': 'de-CH, en;q=0.5' });
    const mail = await smtp.waitForMail(user.email, /zweiter Faktor/);
    assert.equal(mail.subject, 'Acme: Ein zweiter Faktor wurde Ihrem Konto hinzugefügt');
    assert.match(mail.text, /^Ihrem Acme-Konto wurde ein zweiter Faktor hinzugefügt\.$/m);
    assert.match(mail.text, /^Wann: .* UTC$/m);
    assert.match(mail.text, /Wenn Sie das waren, ist nichts zu tun/);
  });

  test('a user without a verified address is sent nothing', async () => {
    const username = `no-address-${++userCount}`;
    const userId = await service.createUser(username, PASSWORD);
    await service.enrolSms(await service.accessToken(username, PASSWORD), nextPhone());
    const messages = await service.rows(sql`select kind from outbox_message where user_id = ${userId}`);
    assert.deepEqual(messages, []);
  });
});
