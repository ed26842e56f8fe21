// The languages of the service's texts (CONTRACT §22): an SMS follows the Accept-Language of the
// request that causes it, and, at the hosted sign-in, the app's ui_locales before it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  authorizationRequest,
  configOf,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { expectStatus, nextPhone, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';

let provider: Provider;
let service: Service;

before(async () => {
  provider = await startProvider();
  service = provider.service;
});
after(() => provider.close());

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

  test('at the hosted sign-in, the app’s ui_locales come before the browser’s Accept-Language', async () => {
    const username = nextName('lisboa');
    const phone = nextPhone();
    await service.createUserWithMfa(username, PASSWORD, phone);
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
    assert.match(lastText(phone) ?? '', /^A sua chave de acesso MFA é \d{6}\. Expira em 5 minutos\.$/);
  });
});
