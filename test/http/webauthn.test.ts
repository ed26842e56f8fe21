import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const PASSWORD = 'correct horse battery';
const ORIGIN = 'https://accounts.example.com';
const RP_ID = 'example.com';

let service: Service;
before(async () => {
  service = await startService({
    env: { WEBAUTHN_RP_ID: RP_ID, WEBAUTHN_ORIGINS: `${ORIGIN},https://example.com`, WEBAUTHN_RP_NAME: 'Example' },
  });
});
after(() => service.close());

let userCount = 0;

function requestPasskey(token: string, body: object = {}) {
  return service.call('/mfa/webauthn/request/', { method: 'PUT', token, body });
}

function verifyPasskey(token: string, credential: unknown, name?: string) {
  return service.call('/mfa/webauthn/verify/', { method: 'PUT', token, body: { credential, name } });
}

/** A user whose only factor is a passkey held by `authenticator`. */
async function passkeyUser(authenticator = new SoftAuthenticator()) {
  const username = `passkey-${++userCount}`;
  await service.createUser(username, PASSWORD);
  const token = await service.accessToken(username, PASSWORD);
  const { options } = await expectStatus(requestPasskey(token, { name: 'Laptop' }), 200);
  await expectStatus(verifyPasskey(token, authenticator.register(options, ORIGIN)), 200);
  return { username, token, authenticator };
}

/** The password step of a passkey login: its WebAuthn request options. */
async function passkeyChallenge(username: string, extra: Record<string, string> = {}) {
  const answer = await expectStatus(service.login(username, PASSWORD, extra), 200);
  assert.equal(answer.mfa_type, 'webauthn');
  return answer.webauthn;
}

function loginWithAssertion(username: string, assertion: unknown) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: { grant_type: 'password', username, password: PASSWORD, webauthn_response: assertion },
  });
}

describe('enrolling a passkey (CONTRACT §12)', () => {
  test('the request answers creation options for this relying party; the browser’s answer verifies and turns MFA on', async () => {
    const username = `passkey-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const { options } = await expectStatus(requestPasskey(token, { name: 'Laptop' }), 200);
    assert.equal(options.rp.id, RP_ID);
    assert.equal(options.rp.name, 'Example');
    assert.equal(options.user.name, username);
    assert.ok(options.challenge.length >= 22, 'a random challenge');
    assert.deepEqual(options.excludeCredentials, []);
    assert.ok(
      options.pubKeyCredParams.some((param: { alg: number }) => param.alg === -7),
      'ES256 offered',
    );

    const authenticator = new SoftAuthenticator();
    assert.deepEqual(await expectStatus(verifyPasskey(token, authenticator.register(options, ORIGIN)), 200), {
      enabled: true,
      challenge_type: 'webauthn',
      phone_number: '',
    });
    const { factors } = await expectStatus(service.call('/mfa/factors/', { token }), 200);
    assert.deepEqual(
      factors.map((factor: { type: string; name: string; is_default: boolean }) => [
        factor.type,
        factor.name,
        factor.is_default,
      ]),
      [['webauthn', 'Laptop', true]],
    );
  });

  test('a registration from another origin, a stale or spent challenge, or none at all: 400 invalid_credential', async () => {
    const username = `passkey-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const authenticator = new SoftAuthenticator();
    assert.equal((await expectStatus(verifyPasskey(token, {}), 400)).error, 'invalid_credential');

    let { options } = await expectStatus(requestPasskey(token), 200);
    const phished = await expectStatus(
      verifyPasskey(token, authenticator.register(options, 'https://examp1e.com')),
      400,
    );
    assert.equal(phished.error, 'invalid_credential');
    // Said in our words, not the verifier's ("Unexpected registration response origin …, expected …").
    assert.match(phished.error_description, /made on another site \(origin\) than this service/);
    assert.doesNotMatch(phished.error_description, /Unexpected|expected/);

    ({ options } = await expectStatus(requestPasskey(token), 200));
    service.clock.advance(301);
    await expectStatus(verifyPasskey(token, authenticator.register(options, ORIGIN)), 400);

    ({ options } = await expectStatus(requestPasskey(token), 200));
    await expectStatus(verifyPasskey(token, authenticator.register(options, ORIGIN)), 200);
    // The same challenge again (a second credential answering it) is refused, also to a login
    // strong enough to add a passkey now that MFA is on.
    const strong = await expectStatus(
      loginWithAssertion(username, authenticator.assert(await passkeyChallenge(username), ORIGIN)),
      200,
    );
    const replayed = await expectStatus(
      verifyPasskey(strong.access_token, new SoftAuthenticator().register(options, ORIGIN)),
      400,
    );
    assert.equal(replayed.error, 'invalid_credential');
    assert.equal(
      (await expectStatus(service.call('/mfa/factors/', { token: strong.access_token }), 200)).factors.length,
      1,
    );
  });

  test('a second passkey needs a second-factor login, and the options exclude the first', async () => {
    const user = await passkeyUser();
    assert.equal((await expectStatus(requestPasskey(user.token), 401)).error, 'insufficient_user_authentication');
    const strong = await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN)),
      200,
    );
    const { options } = await expectStatus(requestPasskey(strong.access_token), 200);
    assert.equal(options.excludeCredentials.length, 1);
  });

  test('of the transports a registration reports, only known ones are kept and echoed in later options', async () => {
    const cases: [unknown, string[] | undefined][] = [
      [
        ['usb', 'carrier-pigeon', 7, {}, 'hybrid'],
        ['usb', 'hybrid'],
      ],
      [[{}], []],
      ['usb', undefined],
      [5, undefined],
      [{ a: 1 }, undefined],
      [null, undefined],
    ];
    for (const [reported, kept] of cases) {
      const username = `passkey-${++userCount}`;
      await service.createUser(username, PASSWORD);
      const token = await service.accessToken(username, PASSWORD);
      const { options } = await expectStatus(requestPasskey(token), 200);
      const credential = new SoftAuthenticator().register(options, ORIGIN);
      credential.response.transports = reported;
      await expectStatus(verifyPasskey(token, credential), 200);
      const [allowed] = (await passkeyChallenge(username)).allowCredentials;
      assert.deepEqual(allowed.transports, kept, `reported ${JSON.stringify(reported)}`);
    }
  });
});

describe('logging in with a passkey', () => {
  test('the password answers mfa_required with request options naming the user’s passkeys; the assertion gives amr pwd+hwk, acr phr', async () => {
    const user = await passkeyUser();
    const options = await passkeyChallenge(user.username);
    assert.equal(options.rpId, RP_ID);
    assert.equal(options.allowCredentials.length, 1);
    const tokens = await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(options, ORIGIN)),
      200,
    );
    const claims = decodeJwt(tokens.access_token);
    assert.deepEqual(claims.amr, ['pwd', 'hwk']);
    assert.equal(claims.acr, 'phr');
    // A passkey login is strong enough for sensitive calls.
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: tokens.access_token }), 200);
  });

  test('in a form body the assertion is a JSON string', async () => {
    const user = await passkeyUser();
    const assertion = user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN);
    const tokens = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'password',
          username: user.username,
          password: PASSWORD,
          webauthn_response: JSON.stringify(assertion),
        }).toString(),
      }),
      200,
    );
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'hwk']);
    const garbled = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'password',
          username: user.username,
          password: PASSWORD,
          webauthn_response: '{not json',
        }).toString(),
      }),
      400,
    );
    assert.equal(garbled.error, 'invalid_request');
  });

  test('a replayed assertion is refused', async () => {
    const user = await passkeyUser();
    const assertion = user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN);
    await expectStatus(loginWithAssertion(user.username, assertion), 200);
    const replay = await expectStatus(loginWithAssertion(user.username, assertion), 400);
    assert.equal(replay.error, 'invalid_grant');
  });

  test('an assertion for a challenge older than 5 minutes is refused', async () => {
    const user = await passkeyUser();
    const options = await passkeyChallenge(user.username);
    service.clock.advance(301);
    await expectStatus(loginWithAssertion(user.username, user.authenticator.assert(options, ORIGIN)), 400);
  });

  test('an assertion made on another origin (phishing) or for another RP ID is refused', async () => {
    const user = await passkeyUser();
    const phished = await expectStatus(
      loginWithAssertion(
        user.username,
        user.authenticator.assert(await passkeyChallenge(user.username), 'https://examp1e.com'),
      ),
      400,
    );
    assert.equal(phished.error, 'invalid_grant');
    assert.match(phished.error_description, /made on another site \(origin\) than this service/);
    assert.doesNotMatch(phished.error_description, /Unexpected|expected/);
    const foreign = await expectStatus(
      loginWithAssertion(
        user.username,
        user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN, { rpId: 'examp1e.com' }),
      ),
      400,
    );
    assert.equal(foreign.error, 'invalid_grant');
    assert.match(foreign.error_description, /belongs to another site \(relying party\) than this service/);
    assert.doesNotMatch(foreign.error_description, /Unexpected|expected/);
  });

  test('a signature counter that goes backwards is refused (a cloned authenticator)', async () => {
    const user = await passkeyUser();
    await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN)),
      200,
    );
    user.authenticator.rewind(1);
    const cloned = await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN)),
      400,
    );
    assert.equal(cloned.error, 'invalid_grant');
    // Said in our words, not the verifier's ("Response counter value 1 was lower than expected 2").
    assert.match(cloned.error_description, /counter went backwards/);
    assert.doesNotMatch(cloned.error_description, /Response counter|expected \d/);
  });

  test('an assertion whose user handle names another account is refused (WebAuthn §7.2 step 6)', async () => {
    const user = await passkeyUser();
    const other = Buffer.from('another-user-id').toString('base64url');
    const answer = await expectStatus(
      loginWithAssertion(
        user.username,
        user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN, { userHandle: other }),
      ),
      400,
    );
    assert.equal(answer.error, 'invalid_grant');
    assert.match(answer.error_description, /user handle/);
    await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN)),
      200,
    );
  });

  test('as a second factor the user handle is optional: left out, null (WebAuthn’s JSON for none) or empty, the assertion logs in; a passkey sign-in without a username needs it', async () => {
    const user = await passkeyUser();
    for (const userHandle of [undefined, null, '']) {
      const assertion = user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN, { userHandle });
      assert.equal(JSON.stringify(assertion).includes('"userHandle"'), userHandle !== undefined, 'sent as JSON');
      const tokens = await expectStatus(loginWithAssertion(user.username, assertion), 200);
      assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'hwk'], `userHandle ${JSON.stringify(userHandle)}`);
    }
    // Without a username the handle is all that names the account: none is refused, and said so.
    const signInOptions = () => expectStatus(service.call('/mfa/webauthn/sign-in/', { method: 'POST' }), 200);
    const passkeyGrant = (assertion: unknown) =>
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'urn:mfa-service:grant-type:passkey', webauthn_response: assertion },
      });
    for (const userHandle of [undefined, null, '']) {
      const { options } = await signInOptions();
      const refused = await expectStatus(passkeyGrant(user.authenticator.assert(options, ORIGIN, { userHandle })), 400);
      assert.equal(refused.error, 'invalid_grant');
      assert.match(refused.error_description, /sent no user handle/);
    }
    const { options } = await signInOptions();
    await expectStatus(passkeyGrant(user.authenticator.assert(options, ORIGIN)), 200);
  });

  test('with the default WEBAUTHN_USER_VERIFICATION=preferred, a passkey made or tapped without user verification is a second factor', async () => {
    const username = `passkey-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const { options: creation } = await expectStatus(requestPasskey(token), 200);
    assert.equal(creation.authenticatorSelection.userVerification, 'preferred');
    const authenticator = new SoftAuthenticator();
    await expectStatus(
      verifyPasskey(token, authenticator.register(creation, ORIGIN, { withoutUserVerification: true })),
      200,
    );
    const user = { username, authenticator };
    const options = await passkeyChallenge(user.username);
    assert.equal(options.userVerification, 'preferred');
    await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(options, ORIGIN, { withoutUserVerification: true })),
      200,
    );
  });

  test('an authenticator without a counter (always 0) still logs in', async () => {
    const user = await passkeyUser(new SoftAuthenticator(0));
    for (let login = 0; login < 2; login++) {
      await expectStatus(
        loginWithAssertion(user.username, user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN)),
        200,
      );
    }
  });

  test('failed assertions count in the guess budget: after 5, the next answers 429 mfa_throttled', async () => {
    const user = await passkeyUser();
    for (let attempt = 0; attempt < 5; attempt++) {
      const options = await passkeyChallenge(user.username);
      await expectStatus(
        loginWithAssertion(user.username, user.authenticator.assert(options, 'https://evil.example')),
        400,
      );
    }
    const options = await passkeyChallenge(user.username);
    const throttled = await expectStatus(
      loginWithAssertion(user.username, user.authenticator.assert(options, ORIGIN)),
      429,
    );
    assert.equal(throttled.error, 'mfa_throttled');
  });
});

describe('passkeys beside other factors (CONTRACT §13, §14)', () => {
  test('acr_values=phr asks for the passkey even when SMS is the default; a code cannot meet it', async () => {
    const phone = nextPhone();
    const { username, token } = await service.createUserWithMfa(`passkey-${++userCount}`, PASSWORD, phone);
    const { options } = await expectStatus(requestPasskey(token), 200);
    const authenticator = new SoftAuthenticator();
    await expectStatus(verifyPasskey(token, authenticator.register(options, ORIGIN)), 200);

    const plain = await expectStatus(service.login(username, PASSWORD), 200);
    assert.equal(plain.mfa_type, 'sms');
    assert.deepEqual(plain.mfa_types, ['sms', 'webauthn']);
    assert.equal(plain.webauthn, undefined, 'no passkey options unless a passkey is asked for');

    // Past the SMS cooldown, so that an SMS sent with the passkey challenge would show.
    service.clock.advance(31);
    const smsBefore = service.twilio.requestCount;
    const phr = await expectStatus(service.login(username, PASSWORD, { acr_values: 'phr' }), 200);
    assert.equal(service.twilio.requestCount, smsBefore, 'a passkey challenge sends no SMS');
    assert.equal(phr.mfa_type, 'webauthn');
    assert.equal(phr.mfa_types, undefined, 'only passkeys reach phr');
    const refused = await expectStatus(
      service.login(username, PASSWORD, { acr_values: 'phr', mfa_code: '123456' }),
      400,
    );
    assert.equal(refused.error, 'invalid_request');
    const tokens = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'password',
          username,
          password: PASSWORD,
          acr_values: 'phr',
          webauthn_response: authenticator.assert(phr.webauthn, ORIGIN),
        },
      }),
      200,
    );
    assert.equal(decodeJwt(tokens.access_token).acr, 'phr');
  });

  test('mfa_code and webauthn_response together are 400 invalid_request', async () => {
    const user = await passkeyUser();
    const assertion = user.authenticator.assert(await passkeyChallenge(user.username), ORIGIN);
    const body = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: {
          grant_type: 'password',
          username: user.username,
          password: PASSWORD,
          mfa_code: '123456',
          webauthn_response: assertion,
        },
      }),
      400,
    );
    assert.equal(body.error, 'invalid_request');
  });
});

describe('passkeys people can tell apart (CONTRACT §19)', () => {
  const GOOGLE_PASSWORD_MANAGER = 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4';

  test('the factor list names the authenticator from its AAGUID, says whether it is synced and whether it signs in alone', async () => {
    const synced = await passkeyUser(
      new SoftAuthenticator(1, { aaguid: GOOGLE_PASSWORD_MANAGER, isSynced: true, isDiscoverable: true }),
    );
    const [passkey] = (await expectStatus(service.call('/mfa/factors/', { token: synced.token }), 200)).factors;
    assert.equal(passkey.authenticator, 'Google Password Manager');
    assert.equal(passkey.synced, true);
    assert.equal(passkey.can_sign_in_alone, true);

    const plain = await passkeyUser(new SoftAuthenticator(1, { isDiscoverable: false }));
    const [key] = (await expectStatus(service.call('/mfa/factors/', { token: plain.token }), 200)).factors;
    assert.equal(key.authenticator, null, 'an unknown (all-zero) AAGUID names nothing');
    assert.equal(key.synced, false);
    assert.equal(key.can_sign_in_alone, false);
  });

  test('registration options ask for a discoverable credential where the authenticator can, and for credProps', async () => {
    const username = `passkey-${++userCount}`;
    await service.createUser(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const { options } = await expectStatus(requestPasskey(token), 200);
    assert.equal(options.authenticatorSelection.residentKey, 'preferred');
    assert.equal(options.extensions.credProps, true);
  });

  test('WEBAUTHN_ALLOWED_AAGUIDS refuses a passkey made on another model, in words that say why', async () => {
    const strict = await startService({
      env: {
        WEBAUTHN_RP_ID: RP_ID,
        WEBAUTHN_ORIGINS: ORIGIN,
        WEBAUTHN_ALLOWED_AAGUIDS: 'cb69481e-8ff7-4039-93ec-0a2729a154a8',
      },
    });
    try {
      await strict.createUser('issued-keys', PASSWORD);
      const token = await strict.accessToken('issued-keys', PASSWORD);
      const request = () => strict.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} });
      const verify = (credential: unknown) =>
        strict.call('/mfa/webauthn/verify/', { method: 'PUT', token, body: { credential } });
      let { options } = await expectStatus(request(), 200);
      const refused = await expectStatus(
        verify(new SoftAuthenticator(1, { aaguid: GOOGLE_PASSWORD_MANAGER }).register(options, ORIGIN)),
        400,
      );
      assert.equal(refused.error, 'invalid_credential');
      assert.match(refused.error_description, /WEBAUTHN_ALLOWED_AAGUIDS.*Google Password Manager/);
      ({ options } = await expectStatus(request(), 200));
      const yubikey = new SoftAuthenticator(1, { aaguid: 'cb69481e-8ff7-4039-93ec-0a2729a154a8' });
      await expectStatus(verify(yubikey.register(options, ORIGIN)), 200);
      const [key] = (await expectStatus(strict.call('/mfa/factors/', { token }), 200)).factors;
      assert.equal(key.authenticator, 'YubiKey 5 Series');
    } finally {
      await strict.close();
    }
  });
});

describe('WEBAUTHN_USER_VERIFICATION=required', () => {
  let strict: Service;
  before(async () => {
    strict = await startService({
      env: { WEBAUTHN_RP_ID: RP_ID, WEBAUTHN_ORIGINS: ORIGIN, WEBAUTHN_USER_VERIFICATION: 'required' },
    });
  });
  after(() => strict.close());

  test('options ask for user verification, and an assertion without it is refused in words that say so', async () => {
    await strict.createUser('uv-user', PASSWORD);
    const token = await strict.accessToken('uv-user', PASSWORD);
    const authenticator = new SoftAuthenticator();
    const { options } = await expectStatus(
      strict.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
      200,
    );
    assert.equal(options.authenticatorSelection.userVerification, 'required');
    await expectStatus(
      strict.call('/mfa/webauthn/verify/', {
        method: 'PUT',
        token,
        body: { credential: authenticator.register(options, ORIGIN) },
      }),
      200,
    );
    const challenge = await expectStatus(strict.login('uv-user', PASSWORD), 200);
    assert.equal(challenge.webauthn.userVerification, 'required');
    const login = (assertion: unknown) =>
      strict.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'password', username: 'uv-user', password: PASSWORD, webauthn_response: assertion },
      });
    const refused = await expectStatus(
      login(authenticator.assert(challenge.webauthn, ORIGIN, { withoutUserVerification: true })),
      400,
    );
    assert.equal(refused.error, 'invalid_grant');
    assert.match(refused.error_description, /did not verify the person \(PIN or biometrics\)/);
    const again = await expectStatus(strict.login('uv-user', PASSWORD), 200);
    await expectStatus(login(authenticator.assert(again.webauthn, ORIGIN)), 200);
  });

  test('a passkey made without user verification is not added, in words that say why; with it, it is', async () => {
    await strict.createUser('uv-register', PASSWORD);
    const token = await strict.accessToken('uv-register', PASSWORD);
    const register = async (tamper: { withoutUserVerification?: boolean }) => {
      const { options } = await expectStatus(
        strict.call('/mfa/webauthn/request/', { method: 'PUT', token, body: {} }),
        200,
      );
      return strict.call('/mfa/webauthn/verify/', {
        method: 'PUT',
        token,
        body: { credential: new SoftAuthenticator().register(options, ORIGIN, tamper) },
      });
    };
    const refused = await expectStatus(register({ withoutUserVerification: true }), 400);
    assert.equal(refused.error, 'invalid_credential');
    assert.match(
      refused.error_description,
      /did not verify the person \(PIN or biometrics\), which this service requires/,
    );
    assert.equal((await expectStatus(strict.call('/mfa/', { token }), 200)).enabled, false);
    await expectStatus(register({}), 200);
  });
});
