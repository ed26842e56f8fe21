import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createMailUser } from '../support/mail-users.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { type ReceivedMail, type SmtpTestServer, startSmtpServer, textOf } from '../support/smtp-server.js';

/** A reset link's mail (security notices go to the same address). */
const RESET_MAIL = /\/account\/reset\/\?token=/;

// CONTRACT §20, "forgot password", over HTTP: the link is mailed through a real SMTP server in this
// process and read back from the mail it received.

const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const NEW_PASSWORD = `new-${randomBytes(8).toString('hex')}`;

let smtp: SmtpTestServer;
let service: Service;

before(async () => {
  smtp = await startSmtpServer();
  service = await startService({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'MFA <no-reply@mfa.example>' } });
});
after(async () => {
  await service.close();
  await smtp.close();
});

let userCount = 0;
/** A user whose address an operator gave (so it counts as verified). */
function newUser(options: { email?: false } = {}) {
  return createMailUser(service, `reset-${++userCount}`, PASSWORD, options);
}

function askReset(body: Record<string, unknown>, on: Service = service) {
  return on.call('/mfa/password/reset/', { method: 'POST', body });
}
function setPassword(token: string, newPassword = NEW_PASSWORD) {
  return service.call('/mfa/password/reset/', { method: 'PUT', body: { token, new_password: newPassword } });
}

/** Waits for the reset mail to `email` (it is sent after the answer) and returns its link's token. */
async function linkTokenFor(email: string, count = 1): Promise<string> {
  for (let tries = 0; smtp.mailTo(email, RESET_MAIL).length < count; tries += 1) {
    if (tries > 1000) throw new Error(`no reset mail reached ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const text = textOf(smtp.mailTo(email, RESET_MAIL).at(-1) as ReceivedMail);
  const link = new RegExp(`${service.config.issuer}/account/reset/\\?token=([A-Za-z0-9_-]+)`).exec(text);
  assert.ok(link?.[1], `the mail holds a link to the reset page: ${text}`);
  return link[1];
}

/** Gives the outbox time to send (it polls every half second), then says whether anything reached `email`. */
async function nothingMailedTo(email: string): Promise<boolean> {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return smtp.mailTo(email).length === 0;
}

describe('forgot password: a link mailed to the verified address', () => {
  test('by username: 202 {}, a link to <ISSUER>/account/reset/; it sets the password once', async () => {
    const { username, email } = await newUser();
    assert.deepEqual(await expectStatus(askReset({ username }), 202), {});
    const token = await linkTokenFor(email);
    const text = smtp.lastTextFor(email);
    assert.match(text, new RegExp(`account ${username}\\b`), 'names the account');
    assert.match(text, /within 30 minutes/);
    assert.match(smtp.mailTo(email)[0]?.raw ?? '', /^Subject: Reset your MFA password/m);
    assert.equal((await setPassword(token)).status, 204);
    assert.equal((await expectStatus(service.login(username, PASSWORD), 400)).error, 'invalid_grant');
    await service.accessToken(username, NEW_PASSWORD);
    const again = await expectStatus(setPassword(token, `other-${NEW_PASSWORD}`), 400);
    assert.equal(again.error, 'invalid_reset_token');
    assert.match(again.error_description, /already used; ask for a new link with POST \/mfa\/password\/reset\//);
  });

  test('by email, whatever its case; in the owner’s stored language, never the asker’s', async () => {
    const { username, email } = await newUser();
    const ask = () =>
      service.call('/mfa/password/reset/', {
        method: 'POST',
        body: { email: email.toUpperCase() },
        headers: { 'accept-language': 'de-AT, en;q=0.5' },
      });
    const lastResetText = () => textOf(smtp.mailTo(email, RESET_MAIL).at(-1) as ReceivedMail);
    // Anyone may ask: a German asker does not choose the words the owner reads.
    assert.deepEqual(await expectStatus(ask(), 202), {});
    await linkTokenFor(email);
    assert.match(lastResetText(), /asked to reset the password of the MFA account/);
    // The owner chose French: the next link comes in French, whatever the asker's language.
    const login = await service.accessToken(username, PASSWORD);
    await expectStatus(service.call('/mfa/language/', { method: 'PUT', token: login, body: { language: 'fr' } }), 200);
    assert.deepEqual(await expectStatus(ask(), 202), {});
    const token = await linkTokenFor(email, 2);
    assert.match(lastResetText(), /réinitialiser le mot de passe du compte MFA/);
    assert.equal((await setPassword(token)).status, 204);
    await service.accessToken(username, NEW_PASSWORD);
  });

  test('the same 202 {} and no mail for an unknown name or address, or an account without a verified address', async () => {
    const { username, email } = await newUser({ email: false });
    for (const body of [{ username: 'nobody-by-this-name' }, { email: 'nobody@mail.example' }, { username }]) {
      const response = await askReset(body);
      assert.equal(response.status, 202);
      assert.equal(await response.text(), '{}');
    }
    assert.ok(await nothingMailedTo(email));
    assert.ok(await nothingMailedTo('nobody@mail.example'));
  });

  test('an account is answered in about the time no account is, even when the mail server never answers', async (t) => {
    const silent = await startSmtpServer({ mode: 'hang' });
    const slow = await startService({ env: { SMTP_URL: silent.url, SMTP_TIMEOUT_MS: '2000' } });
    try {
      const timings = { known: [] as number[], unknown: [] as number[] };
      for (let round = 0; round < 7; round += 1) {
        const username = `timed-${round}`;
        await expectStatus(
          slow.call('/admin/users', {
            method: 'POST',
            token: ADMIN_TOKEN,
            body: { username, password: PASSWORD, email: `${username}@mail.example` },
          }),
          201,
        );
        for (const [kind, name] of [
          ['known', username],
          ['unknown', `missing-${round}`],
        ] as const) {
          const started = performance.now();
          assert.equal((await askReset({ username: name }, slow)).status, 202);
          timings[kind].push(performance.now() - started);
        }
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
      const known = median(timings.known);
      const unknown = median(timings.unknown);
      t.diagnostic(`median answer: ${known.toFixed(1)} ms with an account, ${unknown.toFixed(1)} ms without`);
      // Awaiting the silent server would take its 2 s timeout; the answer comes before any mail.
      assert.ok(known < unknown + 100, `${known} ms against ${unknown} ms`);
    } finally {
      await slow.close();
      await silent.close();
    }
  });

  test('the link is stored only as a keyed hash and never logged', async () => {
    const { username, email } = await newUser();
    await expectStatus(askReset({ username }), 202);
    const token = await linkTokenFor(email);
    assert.ok(!(await service.dumpDatabase()).includes(token), 'no token in the database');
    assert.equal((await setPassword(token)).status, 204);
    assert.ok(!service.log().includes(token), 'no token in the log');
    assert.ok(!service.log().includes(email), 'no whole address in the log');
  });

  test('a link older than 30 minutes has expired; a newer link replaces an older one', async () => {
    const { username, email } = await newUser();
    await expectStatus(askReset({ username }), 202);
    const first = await linkTokenFor(email);
    service.clock.advance(31 * 60);
    const late = await expectStatus(setPassword(first), 400);
    assert.equal(late.error, 'invalid_reset_token');
    assert.match(late.error_description, /expired \(links last 30 minutes\)/);
    await expectStatus(askReset({ email }), 202);
    const second = await linkTokenFor(email, 2);
    await expectStatus(askReset({ username }), 202);
    const third = await linkTokenFor(email, 3);
    assert.match((await expectStatus(setPassword(second), 400)).error_description, /not known/);
    assert.equal((await setPassword(third)).status, 204);
  });

  test('a weak new password is refused and the link still works', async () => {
    const { username, email } = await newUser();
    await expectStatus(askReset({ username }), 202);
    const token = await linkTokenFor(email);
    const weak = await expectStatus(setPassword(token, 'password123'), 400);
    assert.equal(weak.error, 'weak_password');
    const named = await expectStatus(setPassword(token, `${username}-2024`), 400);
    assert.equal(named.error, 'weak_password');
    assert.equal((await setPassword(token)).status, 204);
  });

  test('of many uses of one link racing, exactly one sets the password', async () => {
    const { username, email } = await newUser();
    await expectStatus(askReset({ username }), 202);
    const token = await linkTokenFor(email);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, index) => setPassword(token, `${NEW_PASSWORD}-${index}`)),
    );
    const statuses = answers.map((answer) => answer.status);
    assert.equal(statuses.filter((status) => status === 204).length, 1, statuses.join(' '));
    assert.equal(statuses.filter((status) => status === 400).length, 7);
  });

  test('a reset ends every login; with MFA on, the next sign-in still asks for the second factor', async () => {
    const { username, email } = await newUser();
    const phone = nextPhone();
    await service.enrolSms(await service.accessToken(username, PASSWORD), phone);
    await expectStatus(service.login(username, PASSWORD), 200);
    const before = await expectStatus(
      service.login(username, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${phone}`) }),
      200,
    );
    service.clock.advance(31);
    await expectStatus(askReset({ username }), 202);
    const reset = await setPassword(await linkTokenFor(email));
    assert.equal(reset.status, 204);
    assert.equal(await reset.text(), '', 'no tokens: the reset signs no one in');
    assert.equal((await service.call('/mfa/', { token: before.access_token })).status, 401, 'the access token ends');
    const refreshed = await service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: { grant_type: 'refresh_token', refresh_token: before.refresh_token },
    });
    assert.equal(refreshed.status, 400, 'the refresh token ends');
    const next = await expectStatus(service.login(username, NEW_PASSWORD), 200);
    assert.equal(next.mfa_required, true, 'the second factor is still asked');
    assert.equal(next.access_token, undefined);
  });

  test('a link to an address no longer the account’s does not work', async () => {
    const { username, email } = await newUser();
    await expectStatus(askReset({ username }), 202);
    const token = await linkTokenFor(email);
    const login = await service.accessToken(username, PASSWORD);
    const moved = `moved-${email}`;
    await expectStatus(
      service.call('/mfa/email/request/', { method: 'PUT', token: login, body: { email: moved } }),
      200,
    );
    const code = smtp.lastCodeFor(moved);
    await expectStatus(
      service.call('/mfa/email/verify/', { method: 'PUT', token: login, body: { mfa_code: code } }),
      200,
    );
    const refused = await expectStatus(setPassword(token), 400);
    assert.equal(refused.error, 'invalid_reset_token');
    assert.match(refused.error_description, /no longer the account's/);
  });
});

describe('forgot password: throttled per name or address and per account', () => {
  test('the 6th request in an hour for one username is 429 with Retry-After, whether or not it exists', async () => {
    const { username } = await newUser();
    for (const name of [username, 'never-existed']) {
      for (let request = 1; request <= 5; request += 1) await expectStatus(askReset({ username: name }), 202);
      const refused = await askReset({ username: name });
      assert.equal(refused.status, 429);
      const body = (await refused.json()) as { error: string; error_description: string };
      assert.equal(body.error, 'reset_rate_limited');
      assert.match(body.error_description, /this username has had 5 reset requests this hour; try again in \d+ s/);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
    }
  });

  test('an account gets at most 3 links an hour however it is named, and the answer stays 202', async () => {
    const { username, email } = await newUser();
    for (const body of [{ username }, { email }, { username }, { email }, { username }]) {
      await expectStatus(askReset(body), 202);
    }
    await linkTokenFor(email, 3);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(smtp.mailTo(email, RESET_MAIL).length, 3);
    service.clock.advance(3600);
    await expectStatus(askReset({ username }), 202);
    await linkTokenFor(email, 4);
  });
});

describe('the page a link opens', () => {
  test('/account/reset/ is served like the other pages (CSP, no framing); without its slash it redirects, keeping the token', async () => {
    const page = await service.call('/account/reset/?token=abc');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'.*frame-ancestors 'none'/);
    assert.match(await page.text(), /Choose a new password/);
    const bare = await fetch(`${service.url}/account/reset?token=abc`, { redirect: 'manual' });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get('location'), 'reset/?token=abc');
  });
});

describe('forgot password: bad input changes nothing', () => {
  test('neither or both of username and email, an unknown field, a malformed address, a made-up token: 400', async () => {
    for (const body of [{}, { username: 'a', email: 'a@mail.example' }]) {
      const answer = await expectStatus(askReset(body), 400);
      assert.equal(answer.error, 'invalid_request');
      assert.match(answer.error_description, /username|email/);
    }
    assert.equal((await expectStatus(askReset({ user: 'a' }), 400)).error, 'invalid_request');
    assert.equal((await expectStatus(askReset({ email: 'not an address' }), 400)).error, 'invalid_request');
    const made = await expectStatus(setPassword('made-up-token'), 400);
    assert.equal(made.error, 'invalid_reset_token');
    const missing = await expectStatus(
      service.call('/mfa/password/reset/', { method: 'PUT', body: { token: 'x' } }),
      400,
    );
    assert.match(missing.error_description, /new_password/);
  });
});
