// The languages of the service's texts (CONTRACT §22): the hosted sign-in's ui_locales, else the
// user's stored language (GET and PUT /mfa/language/), else the Accept-Language of the request that
// causes them; a text that may follow someone else's request is in the owner's stored language, else
// English, never in the asker's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMailUser } from '../support/mail-users.js';
import {
  authorizationRequest,
  configOf,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service } from '../support/service.js';
import { type SignInApi, SignInBrowser } from '../support/sign-in-browser.js';
import { type SmtpTestServer, startSmtpServer } from '../support/smtp-server.js';

const SHIPPED = ['en', 'de', 'fr', 'es', 'pt'];

let smtp: SmtpTestServer;
let provider: Provider;
let service: Service;

before(async () => {
  smtp = await startSmtpServer();
  provider = await startProvider({ env: { SMTP_URL: smtp.url } });
  service = provider.service;
});
after(async () => {
  await provider.close();
  await smtp.close();
});

const lastText = (phone: string) => service.twilio.messages.filter((sent) => sent.to === `+${phone}`).at(-1)?.body;

describe('the language of an SMS', () => {
  test('follows Accept-Language by its q-values: German, then French, then English for a language not shipped', async () => {
    const username = nextName('polyglot');
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const phone = nextPhone();
    const request = (acceptLanguage: string) =>
      expectStatus(
        service.call('/mfa/sms/request/', {
          method: 'PUT',
          token,
          body: { phone_number: phone },
          headers: { 'accept-language': acceptLanguage },
        }),
        200,
      );
    await request('de-CH, en;q=0.5');
    assert.match(lastText(phone) ?? '', /^Ihr MFA-Bestätigungscode lautet \d{6}\. Er ist 5 Minuten gültig\.$/);
    service.clock.advance(61);
    await request('nl;q=1, fr;q=0.9, de;q=0.1');
    assert.match(lastText(phone) ?? '', /^Votre code de vérification MFA est \d{6}\. Il expire dans 5 minutes\.$/);
    service.clock.advance(61);
    await request('nl, sv');
    assert.match(lastText(phone) ?? '', /^Your MFA verification code is \d{6}\. It expires in 5 minutes\.$/);
  });

  test('at the hosted sign-in, the app’s ui_locales come before the user’s stored language and the browser’s Accept-Language', async () => {
    const username = nextName('lisboa');
    const phone = nextPhone();
    const { token } = await service.createUserWithMfa(username, PASSWORD, phone);
    await expectStatus(putLanguage(token, { language: 'de' }), 200);
    const config = await configOf(provider.issuer, await registerClient(service));
    const request = await authorizationRequest(config, { ui_locales: 'pt-PT en' });
    const browser = new SignInBrowser(provider.issuer);
    const signIn = await browser.startSignIn(request.url);
    const response = await signIn.send(
      'POST',
      'password',
      { username, password: PASSWORD },
      { 'accept-language': 'es' },
    );
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(((await response.json()) as { mfa_type: string }).mfa_type, 'sms');
    assert.match(lastText(phone) ?? '', /^Use \d{6} para confirmar a sua identidade em MFA\. Expira em 5 minutos\.$/);
  });
});

/** A user with an operator-given (so verified) address and a password-only token. */
async function userWithAddress(prefix: string) {
  const user = await createMailUser(service, nextName(prefix), PASSWORD);
  return { ...user, token: await service.accessToken(user.username, PASSWORD) };
}

const getLanguage = (token: string) => service.call('/mfa/language/', { token });
const putLanguage = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  service.call('/mfa/language/', { method: 'PUT', token, body, headers });

describe('the user’s stored language', () => {
  test('GET and PUT /mfa/language/: none at first, then the one chosen, then none again (the browser’s)', async () => {
    const { token, userId } = await userWithAddress('chooser');
    assert.deepEqual(await expectStatus(getLanguage(token), 200), { language: null, languages: SHIPPED });
    assert.deepEqual(await expectStatus(putLanguage(token, { language: 'de' }), 200), {
      language: 'de',
      languages: SHIPPED,
    });
    assert.deepEqual(await expectStatus(getLanguage(token), 200), { language: 'de', languages: SHIPPED });
    assert.deepEqual(await expectStatus(putLanguage(token, { language: null }), 200), {
      language: null,
      languages: SHIPPED,
    });
    assert.deepEqual(await expectStatus(getLanguage(token), 200), { language: null, languages: SHIPPED });
    // It chooses the words of the owner's notices about others' requests: each change is recorded.
    const { events } = await expectStatus(service.call(`/admin/users/${userId}/events`, { token: ADMIN_TOKEN }), 200);
    const changes = (events as { type: string; outcome: string; detail?: { language: string } }[])
      .filter((event) => event.type === 'language_changed')
      .map((event) => [event.outcome, event.detail?.language]);
    assert.deepEqual(changes.sort(), [
      ['succeeded', 'browser'],
      ['succeeded', 'de'],
    ]);
  });

  test('a language not shipped, a wrong type, a missing or unknown field: 400, and the stored one stays', async () => {
    const { token } = await userWithAddress('refused');
    await expectStatus(putLanguage(token, { language: 'fr' }), 200);
    const notShipped = await expectStatus(putLanguage(token, { language: 'nl' }), 400);
    assert.equal(notShipped.error, 'invalid_request');
    assert.match(notShipped.error_description, /^language: .*en, de, fr, es, pt/);
    for (const body of [
      { language: 'FR-ca' },
      { language: 'de-DE' },
      { language: '' },
      { language: 5 },
      { language: ['de'] },
      {},
      { language: 'de', theme: 'dark' },
      { lang: 'de' },
    ]) {
      const refused = await expectStatus(putLanguage(token, body), 400);
      assert.deepEqual(Object.keys(refused).sort(), ['error', 'error_description'], JSON.stringify(body));
      assert.equal(refused.error, 'invalid_request', JSON.stringify(body));
    }
    assert.equal((await expectStatus(putLanguage(token, 'de'), 400)).error, 'invalid_request');
    assert.equal((await expectStatus(getLanguage(token), 200)).language, 'fr');
    assert.equal((await putLanguage('not a token', { language: 'de' })).status, 401);
    assert.equal((await getLanguage('not a token')).status, 401);
    assert.equal((await expectStatus(getLanguage(token), 200)).language, 'fr');
  });

  test('an SMS code and the mail that proves an address are in the stored language when the request gives no ui_locales, whatever its Accept-Language', async () => {
    const { token, username } = await userWithAddress('stored');
    const askInFrench = (path: string, body: Record<string, string>) =>
      expectStatus(service.call(path, { method: 'PUT', token, body, headers: { 'accept-language': 'fr' } }), 200);
    await expectStatus(putLanguage(token, { language: 'de' }), 200);
    const phone = nextPhone();
    await askInFrench('/mfa/sms/request/', { phone_number: phone });
    assert.match(lastText(phone) ?? '', /^Ihr MFA-Bestätigungscode lautet \d{6}\. Er ist 5 Minuten gültig\.$/);

    await expectStatus(putLanguage(token, { language: 'es' }), 200);
    const address = `${username}@elsewhere.example`;
    await askInFrench('/mfa/email/request/', { email: address });
    assert.match((await smtp.waitForMail(address)).subject, /^Su código de verificación de MFA: \d{6}$/);
  });

  test('a notice of a sign-in throttled is in the owner’s stored language, not the guesser’s', async () => {
    const owner = await userWithAddress('guessed-fr');
    await expectStatus(putLanguage(owner.token, { language: 'fr' }), 200);
    let answer: Response;
    do
      answer = await service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'password', username: owner.username, password: 'not the password' },
        headers: { 'accept-language': 'de' },
      });
    while (answer.status !== 429);
    const mail = await smtp.waitForMail(owner.email, /connexions/);
    assert.equal(mail.subject, 'MFA : les connexions à votre compte ont été suspendues');
    service.clock.advance(Number(answer.headers.get('retry-after')) + 1);
  });

  test('a password an operator sets is told in the owner’s stored language, else English, never the operator’s', async () => {
    for (const [stored, subject] of [
      ['pt', /^MFA: a sua senha foi alterada/],
      [null, /^MFA: your password was changed$/],
    ] as const) {
      const owner = await userWithAddress(`operator-set-${stored ?? 'none'}`);
      await expectStatus(putLanguage(owner.token, { language: stored }), 200);
      await expectStatus(
        service.call(`/admin/users/${owner.userId}/password`, {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { password: `granite lantern ${stored ?? 'none'} orchard` },
          headers: { 'accept-language': 'de' },
        }),
        204,
      );
      const mail = await smtp.waitForMail(owner.email, subject);
      assert.ok(!/Passwort/.test(mail.text), 'not a word of German');
    }
  });

  test('a recovery asked by anyone is told in the owner’s stored language (mail and SMS), else in English', async () => {
    for (const [stored, sms, subject] of [
      ['es', /^MFA: alguien pidió recuperar su cuenta/, /recuperar/],
      [null, /^MFA: someone asked to recover your account/, /recover your account/],
    ] as const) {
      const owner = await userWithAddress(`recovered-${stored ?? 'none'}`);
      const phone = nextPhone();
      await service.enrolSms(owner.token, phone);
      await expectStatus(putLanguage(owner.token, { language: stored }), 200);
      service.clock.advance(31);
      await expectStatus(
        service.call('/mfa/recovery-request/', {
          method: 'POST',
          body: { username: owner.username, password: PASSWORD },
          headers: { 'accept-language': 'de' },
        }),
        202,
      );
      const mail = await smtp.waitForMail(owner.email, subject);
      assert.ok(!/[Kk]onto/.test(mail.text), 'not a word of German');
      await eventually(() => sms.test(lastText(phone) ?? ''));
    }
  });
});

describe('the hosted sign-in’s language', () => {
  /** The description the page reads, asked with this Accept-Language. */
  async function describedLanguage(signIn: SignInApi, acceptLanguage: string): Promise<string> {
    const response = await signIn.browser.request(`${provider.issuer}/mfa/oauth2/sign-in/${signIn.id}/`, {
      headers: { 'accept-language': acceptLanguage },
    });
    const body = (await response.json()) as { language: string };
    assert.equal(response.status, 200, JSON.stringify(body));
    return body.language;
  }

  test('ui_locales first; else Accept-Language while no one is signed in, whatever the login_hint names', async () => {
    const { token, username } = await userWithAddress('hinted');
    await expectStatus(putLanguage(token, { language: 'de' }), 200);
    const config = await configOf(provider.issuer, await registerClient(service));
    const browser = new SignInBrowser(provider.issuer);

    const withLocales = await browser.startSignIn((await authorizationRequest(config, { ui_locales: 'xx es' })).url);
    assert.equal(await describedLanguage(withLocales, 'fr'), 'es');

    const plain = await browser.startSignIn((await authorizationRequest(config)).url);
    assert.equal(await describedLanguage(plain, 'fr-CA, de;q=0.5'), 'fr');
    assert.equal(await describedLanguage(plain, 'nl'), 'en', 'none shipped: English');

    // A login_hint tells nothing: a known name with a stored language answers as an unknown one.
    for (const hint of [username, 'nobody-by-this-name']) {
      const hinted = await browser.startSignIn((await authorizationRequest(config, { login_hint: hint })).url);
      assert.equal(await describedLanguage(hinted, 'fr'), 'fr', hint);
    }
  });

  test('the stored language of the user this browser proved to be, past the password or from its sign-in session', async () => {
    const { token, username } = await userWithAddress('known');
    await expectStatus(putLanguage(token, { language: 'pt' }), 200);
    const config = await configOf(provider.issuer, await registerClient(service, { mfa_policy: 'required' }));
    const browser = new SignInBrowser(provider.issuer);
    // Past the password, the sign-in asks this user to add a second factor: the page is in their language.
    const signIn = await browser.startSignIn((await authorizationRequest(config)).url);
    assert.equal((await signIn.password(username, PASSWORD)).step, 'enrol');
    assert.equal(await describedLanguage(signIn, 'fr'), 'pt');

    // A sign-in session, then a new sign-in with prompt=login: the browser is known to be theirs.
    const other = await registerClient(service);
    const otherConfig = await configOf(provider.issuer, other);
    await signInWithPassword(browser, (await authorizationRequest(otherConfig)).url, username);
    const again = await browser.startSignIn((await authorizationRequest(otherConfig, { prompt: 'login' })).url);
    assert.equal(await describedLanguage(again, 'fr'), 'pt');
    const withLocales = await browser.startSignIn(
      (await authorizationRequest(otherConfig, { prompt: 'login', ui_locales: 'de' })).url,
    );
    assert.equal(await describedLanguage(withLocales, 'fr'), 'de');
  });
});

describe('adding a factor during the hosted sign-in', () => {
  test('its SMS and its notice speak the sign-in’s ui_locales, as the page does, not the request’s Accept-Language', async () => {
    const { username, email } = await userWithAddress('enrolling');
    const config = await configOf(provider.issuer, await registerClient(service, { mfa_policy: 'required' }));
    const browser = new SignInBrowser(provider.issuer);
    const signIn = await browser.startSignIn((await authorizationRequest(config, { ui_locales: 'de' })).url);
    assert.equal((await signIn.password(username, PASSWORD)).step, 'enrol');
    const phone = nextPhone();
    const english = { 'accept-language': 'en' };
    const asked = await signIn.send('PUT', 'sms/request/', { phone_number: phone }, english);
    assert.equal(asked.status, 200, await asked.text());
    assert.match(lastText(phone) ?? '', /^Ihr MFA-Bestätigungscode lautet \d{6}/);
    const code = /\d{6}/.exec(lastText(phone) ?? '')?.[0] ?? '';
    const verified = await signIn.send('PUT', 'sms/verify/', { mfa_code: code }, english);
    assert.equal(verified.status, 200, await verified.text());
    await smtp.waitForMail(email, /^MFA: Ein zweiter Faktor wurde Ihrem Konto hinzugefügt$/);
  });
});

describe('the stored language elsewhere', () => {
  test('userinfo’s locale claim (profile scope) and the admin API’s user view', async () => {
    const { token, userId, username } = await userWithAddress('claimed');
    const detail = () => expectStatus(service.call(`/admin/users/${userId}`, { token: ADMIN_TOKEN }), 200);
    assert.equal((await detail()).language, null);
    await expectStatus(putLanguage(token, { language: 'fr' }), 200);
    assert.equal((await detail()).language, 'fr');

    const config = await configOf(provider.issuer, await registerClient(service));
    const request = await authorizationRequest(config);
    const back = await signInWithPassword(new SignInBrowser(provider.issuer), request.url, username);
    const tokens = await exchange(config, back, request);
    const info = await expectStatus(service.call('/mfa/oauth2/userinfo/', { token: tokens.access_token }), 200);
    assert.deepEqual(info, { sub: userId, preferred_username: username, locale: 'fr' });
  });
});

async function eventually(check: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('not within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
