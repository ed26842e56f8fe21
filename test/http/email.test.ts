import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';

// CONTRACT §20, email as a channel, over HTTP: the code is mailed through a real SMTP server in
// this process (smtp-server), read back from the mail it received, and proves the address.

const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const REFUSED = 'nobody@refused.example';

interface ErrorAnswer {
  error: string;
  error_description: string;
}

let smtp: SmtpTestServer;
let service: Service;

before(async () => {
  smtp = await startSmtpServer({ refuseRecipient: (address) => address === REFUSED });
  service = await startService({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'MFA <no-reply@mfa.example>' } });
});
after(async () => {
  await service.close();
  await smtp.close();
});

let userCount = 0;
/** A new user without MFA and a fresh login of theirs. */
async function newUser(prefix = 'mail') {
  const username = `${prefix}-${++userCount}`;
  const userId = await service.createUser(username, PASSWORD);
  return { username, userId, token: await service.accessToken(username, PASSWORD) };
}

const address = (label: string) => `${label}-${userCount}@mail.example`;

function getEmail(token: string) {
  return expectStatus(service.call('/mfa/email/', { token }), 200);
}
function requestCode(token: string, email: string, on: Service = service) {
  return on.call('/mfa/email/request/', { method: 'PUT', token, body: { email } });
}
function verify(token: string, code: string) {
  return service.call('/mfa/email/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

describe('an email address, proved by a code mailed to it', () => {
  test('none at first; the request mails a 6-digit code; the code makes it count', async () => {
    const { token } = await newUser();
    assert.deepEqual(await getEmail(token), { email: '', verified: false });
    const email = address('first');
    assert.deepEqual(await expectStatus(requestCode(token, email), 200), { email, verified: false });
    const [mail] = smtp.mailTo(email);
    assert.ok(mail, 'the code was mailed');
    assert.match(mail.raw, /^From: MFA <no-reply@mfa\.example>/m);
    assert.match(mail.raw, /^Subject: Your MFA verification code: \d{6}/m);
    assert.match(mail.raw, /It expires in 5 minutes/);
    assert.deepEqual(await getEmail(token), { email, verified: false }, 'waiting for its code');
    const code = smtp.lastCodeFor(email);
    assert.deepEqual(await expectStatus(verify(token, code), 200), { email, verified: true });
    assert.deepEqual(await getEmail(token), { email, verified: true });
    const again = await expectStatus(verify(token, code), 400);
    assert.equal(again.error, 'invalid_mfa_code', 'a code works once');
  });

  test('the mail is in the language the request prefers (Accept-Language)', async () => {
    const { token } = await newUser();
    const email = address('french');
    await expectStatus(
      service.call('/mfa/email/request/', {
        method: 'PUT',
        token,
        body: { email },
        headers: { 'accept-language': 'fr-CA, en;q=0.3' },
      }),
      200,
    );
    const [mail] = smtp.mailTo(email);
    assert.ok(mail);
    assert.match(mail.raw, /Il expire dans 5 minutes/);
    assert.match(mail.raw, /^Subject: /m);
    assert.doesNotMatch(mail.raw, /It expires in/);
  });

  test('the code is stored only as a keyed hash and never logged', async () => {
    const { token } = await newUser();
    const email = address('secret');
    await expectStatus(requestCode(token, email), 200);
    const code = smtp.lastCodeFor(email);
    assert.ok(!(await service.dumpDatabase()).includes(code), 'no code in the database');
    await expectStatus(verify(token, code), 200);
    assert.ok(!service.log().includes(code), 'no code in the log');
    assert.ok(!service.log().includes(email), 'no whole address in the log');
  });

  test('a wrong code is 400 invalid_mfa_code; after 5 attempts even the right one is refused', async () => {
    const { token } = await newUser();
    const email = address('guess');
    await expectStatus(requestCode(token, email), 200);
    const code = smtp.lastCodeFor(email);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      assert.equal((await expectStatus(verify(token, wrong), 400)).error, 'invalid_mfa_code');
    }
    const late = await expectStatus(verify(token, code), 400);
    assert.match(late.error_description, /too many attempts/);
    assert.deepEqual(await getEmail(token), { email: '', verified: false });
  });

  test('of many guesses racing with the right code, the code still works once and the cap holds', async () => {
    const { token } = await newUser();
    const email = address('race');
    await expectStatus(requestCode(token, email), 200);
    const code = smtp.lastCodeFor(email);
    const answers = await Promise.all(Array.from({ length: 10 }, () => verify(token, code)));
    assert.equal(answers.filter((answer) => answer.status === 200).length, 1);
  });

  test('a second request within 30 s is 429 email_cooldown with Retry-After; later, a new code replaces the old', async () => {
    const { token } = await newUser();
    const email = address('cooldown');
    await expectStatus(requestCode(token, email), 200);
    const first = smtp.lastCodeFor(email);
    const early = await requestCode(token, email);
    assert.equal(early.status, 429);
    assert.equal(((await early.json()) as ErrorAnswer).error, 'email_cooldown');
    assert.ok(Number(early.headers.get('retry-after')) > 0);
    assert.equal(smtp.mailTo(email).length, 1, 'no second mail');
    service.clock.advance(31);
    await expectStatus(requestCode(token, email), 200);
    const second = smtp.lastCodeFor(email);
    if (second !== first) assert.equal((await expectStatus(verify(token, first), 400)).error, 'invalid_mfa_code');
    await expectStatus(verify(token, second), 200);
  });

  test('a code older than 5 minutes has expired', async () => {
    const { username } = await newUser();
    const email = address('late');
    const token = await service.accessToken(username, PASSWORD);
    await expectStatus(requestCode(token, email), 200);
    service.clock.advance(301);
    const expired = await expectStatus(verify(token, smtp.lastCodeFor(email)), 400);
    assert.match(expired.error_description, /expired/);
  });

  test('an address the mail server refuses is 400 email_address_rejected, and nothing is kept', async () => {
    const { token } = await newUser();
    const refused = await expectStatus(requestCode(token, REFUSED), 400);
    assert.equal(refused.error, 'email_address_rejected');
    assert.deepEqual(await getEmail(token), { email: '', verified: false });
    // Nothing went out, so no cooldown holds.
    await expectStatus(requestCode(token, address('after-refusal')), 200);
  });

  test('a malformed address is 400 invalid_request naming the field', async () => {
    const { token } = await newUser();
    for (const email of ['no-at-sign', 'two@@example.com', 'a b@example.com', `${'x'.repeat(250)}@example.com`]) {
      const refused = await expectStatus(requestCode(token, email), 400);
      assert.equal(refused.error, 'invalid_request', email);
      assert.match(refused.error_description, /^email: expected an email address/);
    }
    assert.equal(smtp.received.filter((mail) => mail.to.includes('no-at-sign')).length, 0);
  });

  test('it is a sensitive call: a login older than STEP_UP_MAX_AGE must log in again', async () => {
    const { token } = await newUser();
    service.clock.advance(601);
    const stale = await expectStatus(requestCode(token, address('stale')), 401);
    assert.equal(stale.error, 'insufficient_user_authentication');
  });

  test('an address an operator gives counts at once; the audit trail records a verification', async () => {
    const email = `given-${++userCount}@mail.example`;
    const username = `operator-given-${userCount}`;
    const created = await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username, password: PASSWORD, email },
      }),
      201,
    );
    assert.equal(created.email, email);
    const token = await service.accessToken(username, PASSWORD);
    assert.deepEqual(await getEmail(token), { email, verified: true });

    const { userId, token: other } = await newUser();
    await expectStatus(requestCode(other, address('audited')), 200);
    await expectStatus(verify(other, smtp.lastCodeFor(address('audited'))), 200);
    const { events } = await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
    assert.ok(events.some((event: { type: string }) => event.type === 'email_verified'));
  });
});

describe('a mail server that fails or is silent: answered as SMS are (CONTRACT §5), nothing half done', () => {
  test('one that refuses every connection: 502 mail_unavailable, no cooldown spent, and the mail is not sent later', async () => {
    const refusing = await startSmtpServer({ mode: 'refuse' });
    const down = await startService({ env: { SMTP_URL: refusing.url } });
    try {
      await down.createUser('refused-server', PASSWORD);
      const token = await down.accessToken('refused-server', PASSWORD);
      const answer = await requestCode(token, 'someone@mail.example', down);
      assert.equal(answer.status, 502);
      const body = (await answer.json()) as ErrorAnswer;
      assert.equal(body.error, 'mail_unavailable');
      assert.match(body.error_description, /try again/);
      assert.equal(
        (await requestCode(token, 'someone@mail.example', down)).status,
        502,
        'no cooldown: nothing was sent',
      );
      assert.equal((await expectStatus(down.call('/mfa/email/', { token }), 200)).email, '', 'no pending address');
      refusing.startAccepting();
      down.clock.advance(3600);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.deepEqual(
        refusing.mailTo('someone@mail.example'),
        [],
        'no code mail comes later, for a code that is gone',
      );
    } finally {
      await down.close();
      await refusing.close();
    }
  });

  test('one that never answers: 504 mail_timeout within SMTP_TIMEOUT_MS; the code stands and the cooldown is spent', async () => {
    const silent = await startSmtpServer({ mode: 'hang' });
    const slow = await startService({ env: { SMTP_URL: silent.url, SMTP_TIMEOUT_MS: '300' } });
    try {
      await slow.createUser('silent-server', PASSWORD);
      const token = await slow.accessToken('silent-server', PASSWORD);
      const started = performance.now();
      const answer = await requestCode(token, 'someone@mail.example', slow);
      assert.ok(performance.now() - started < 3000, 'the request is not held by the silent server');
      assert.equal(answer.status, 504);
      const body = (await answer.json()) as ErrorAnswer;
      assert.equal(body.error, 'mail_timeout');
      assert.match(body.error_description, /did not answer within 0\.3 s; the code may still arrive/);
      // As for an SMS whose provider was silent: a second request waits out the cooldown.
      assert.equal((await requestCode(token, 'someone@mail.example', slow)).status, 429);
    } finally {
      await slow.close();
      await silent.close();
    }
  });
});
