// Passkeys first, passwords optional (CONTRACT §19): accounts without a password and their invites,
// signing in with a passkey alone (the token endpoint's passkey grant for first-party pages, the
// hosted sign-in for apps), and removing or adding back a password. Passkeys are SoftAuthenticator's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import {
  authorizationRequest,
  configOf,
  exchange,
  nextName,
  PASSWORD,
  type Provider,
  registerClient,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const PASSKEY_GRANT = 'urn:mfa-service:grant-type:passkey';

let provider: Provider;
let service: Service;
let origin: string;

before(async () => {
  provider = await startProvider();
  service = provider.service;
  origin = provider.issuer;
});
after(() => provider.close());

/** A discoverable passkey, as a platform authenticator makes one. */
const newAuthenticator = () => new SoftAuthenticator(1, { isDiscoverable: true });

function passkeyOptions() {
  return expectStatus(service.call('/mfa/webauthn/sign-in/', { method: 'POST' }), 200);
}

function passkeyGrant(assertion: unknown) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    body: { grant_type: PASSKEY_GRANT, webauthn_response: assertion },
  });
}

/** An account made without a password, its invite link's token, and a passkey made from it. */
async function passwordlessUser(authenticator = newAuthenticator()) {
  const username = nextName('passkey-only');
  const created = await expectStatus(
    service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username } }),
    201,
  );
  const invite = new URL(created.invite_url).hash.replace('#invite=', '');
  const { options } = await expectStatus(
    service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite } }),
    200,
  );
  const accepted = await expectStatus(
    service.call('/mfa/invite/passkey/', {
      method: 'POST',
      body: { invite, credential: authenticator.register(options, origin), name: 'Laptop' },
    }),
    200,
  );
  return { id: created.id as string, username, invite, authenticator, accepted };
}

describe('accounts without a password (CONTRACT §19)', () => {
  test('POST /admin/users without a password answers an invite link; its passkey signs the person in (amr hwk user, acr phr)', async () => {
    const user = await passwordlessUser();
    assert.equal(user.accepted.username, user.username);
    const claims = decodeJwt(user.accepted.access_token);
    assert.equal(claims.sub, user.id);
    assert.deepEqual(claims.amr, ['hwk', 'user']);
    assert.equal(claims.acr, 'phr');
    const status = await expectStatus(service.call('/mfa/', { token: user.accepted.access_token }), 200);
    assert.deepEqual(status, { enabled: true, challenge_type: 'webauthn', phone_number: '' });
    // The invite is stored as a hash only.
    assert.ok(!(await service.dumpDatabase()).includes(user.invite));
  });

  test('an invite works once: used, replaced by a newer one, or 24 hours old, it is 410 invite_expired', async () => {
    const user = await passwordlessUser();
    const again = await expectStatus(
      service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite: user.invite } }),
      410,
    );
    assert.equal(again.error, 'invite_expired');

    const username = nextName('invited');
    const created = await expectStatus(
      service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username } }),
      201,
    );
    const first = new URL(created.invite_url).hash.slice('#invite='.length);
    const reissued = await expectStatus(
      service.call(`/admin/users/${created.id}/invite`, { method: 'POST', token: ADMIN_TOKEN }),
      201,
    );
    const second = new URL(reissued.invite_url).hash.slice('#invite='.length);
    await expectStatus(service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite: first } }), 410);
    service.clock.advance(24 * 3600 + 1);
    await expectStatus(service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite: second } }), 410);
  });

  test('a registration that does not verify leaves the invite usable', async () => {
    const username = nextName('retry');
    const created = await expectStatus(
      service.call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username } }),
      201,
    );
    const invite = new URL(created.invite_url).hash.slice('#invite='.length);
    const authenticator = newAuthenticator();
    const options = (
      await expectStatus(service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite } }), 200)
    ).options;
    const phished = await expectStatus(
      service.call('/mfa/invite/passkey/', {
        method: 'POST',
        body: { invite, credential: authenticator.register(options, 'https://evil.example') },
      }),
      400,
    );
    assert.equal(phished.error, 'invalid_credential');
    const retry = (
      await expectStatus(service.call('/mfa/invite/passkey/options/', { method: 'POST', body: { invite } }), 200)
    ).options;
    await expectStatus(
      service.call('/mfa/invite/passkey/', {
        method: 'POST',
        body: { invite, credential: authenticator.register(retry, origin) },
      }),
      200,
    );
  });

  test('the password grant tells an account without a password to use its passkey', async () => {
    const user = await passwordlessUser();
    const refused = await expectStatus(service.login(user.username, 'any password at all'), 400);
    assert.equal(refused.error, 'invalid_grant');
    assert.match(refused.error_description, /sign in with a passkey/);
  });

  test('an invite for an account that already has second factors is 409: reset its MFA first', async () => {
    const user = await passwordlessUser();
    const refused = await expectStatus(
      service.call(`/admin/users/${user.id}/invite`, { method: 'POST', token: ADMIN_TOKEN }),
      409,
    );
    assert.match(refused.error_description, /reset its MFA first/);
  });
});

describe('signing in with a passkey alone (CONTRACT §19)', () => {
  test('options ask for user verification and name no credential; the passkey grant gives amr hwk user, acr phr', async () => {
    const user = await passwordlessUser();
    const { options } = await passkeyOptions();
    assert.equal(options.userVerification, 'required');
    assert.deepEqual(options.allowCredentials ?? [], []);
    const tokens = await expectStatus(passkeyGrant(user.authenticator.assert(options, origin)), 200);
    const claims = decodeJwt(tokens.access_token);
    assert.equal(claims.sub, user.id);
    assert.deepEqual(claims.amr, ['hwk', 'user']);
    assert.equal(claims.acr, 'phr');
  });

  test('a replayed assertion, one without user verification, one for another user handle or an expired challenge is invalid_grant', async () => {
    const user = await passwordlessUser();
    let { options } = await passkeyOptions();
    const assertion = user.authenticator.assert(options, origin);
    await expectStatus(passkeyGrant(assertion), 200);
    assert.equal((await expectStatus(passkeyGrant(assertion), 400)).error, 'invalid_grant', 'replayed');

    ({ options } = await passkeyOptions());
    await expectStatus(
      passkeyGrant(user.authenticator.assert(options, origin, { withoutUserVerification: true })),
      400,
    );

    ({ options } = await passkeyOptions());
    const other = await passwordlessUser();
    const foreign = user.authenticator.assert(options, origin, {
      userHandle: Buffer.from(other.id).toString('base64url'),
    });
    await expectStatus(passkeyGrant(foreign), 400);

    ({ options } = await passkeyOptions());
    service.clock.advance(301);
    await expectStatus(passkeyGrant(user.authenticator.assert(options, origin)), 400);
    // A challenge this service did not sign.
    const forged = { ...options, challenge: Buffer.from(`x.${Date.now() + 60_000}.y`).toString('base64url') };
    await expectStatus(passkeyGrant(user.authenticator.assert(forged, origin)), 400);
    ({ options } = await passkeyOptions());
    await expectStatus(passkeyGrant(user.authenticator.assert(options, origin)), 200);
  });

  test('the hosted sign-in takes a passkey instead of the password; it meets acr_values=phr at once', async () => {
    const user = await passwordlessUser();
    const config = await configOf(origin, await registerClient(service));
    const request = await authorizationRequest(config, { acr_values: 'phr' });
    const signIn = await new SignInBrowser(origin).startSignIn(request.url);
    const { options } = await passkeyOptions();
    const done = await signIn.expect(
      'POST',
      'passkey',
      { webauthn_response: user.authenticator.assert(options, origin) },
      200,
    );
    const tokens = await exchange(config, done.location, request);
    assert.deepEqual(tokens.claims()?.amr, ['hwk', 'user']);
    assert.equal(tokens.claims()?.acr, 'phr');
  });
});

describe('removing the password, and adding it back (CONTRACT §19, §20)', () => {
  test('with two passkeys and a fresh second factor the password goes; the password grant then refuses it; PUT adds one back', async () => {
    const username = nextName('two-keys');
    await service.createUser(username, PASSWORD);
    const first = newAuthenticator();
    const second = newAuthenticator();
    let token = await service.accessToken(username, PASSWORD);
    const enrol = async (authenticator: SoftAuthenticator, bearer: string) => {
      const { options } = await expectStatus(
        service.call('/mfa/webauthn/request/', { method: 'PUT', token: bearer, body: {} }),
        200,
      );
      await expectStatus(
        service.call('/mfa/webauthn/verify/', {
          method: 'PUT',
          token: bearer,
          body: { credential: authenticator.register(options, origin) },
        }),
        200,
      );
    };
    await enrol(first, token);
    const strong = async () => {
      const { options } = await passkeyOptions();
      return (await expectStatus(passkeyGrant(first.assert(options, origin)), 200)).access_token as string;
    };
    token = await strong();
    const tooFew = await expectStatus(service.call('/mfa/password/', { method: 'DELETE', token }), 409);
    assert.equal(tooFew.error, 'too_few_passkeys');
    await enrol(second, token);
    token = await strong();
    assert.deepEqual(await expectStatus(service.call('/mfa/password/', { token }), 200), { has_password: true });
    await expectStatus(service.call('/mfa/password/', { method: 'DELETE', token }), 204);
    assert.deepEqual(await expectStatus(service.call('/mfa/password/', { token }), 200), { has_password: false });
    assert.match((await expectStatus(service.login(username, PASSWORD), 400)).error_description, /passkey/);

    // Adding one back: no current password to give.
    token = await strong();
    await expectStatus(
      service.call('/mfa/password/', { method: 'PUT', token, body: { new_password: 'a new long passphrase' } }),
      204,
    );
    assert.equal((await expectStatus(service.login(username, 'a new long passphrase'), 200)).mfa_required, true);
  });

  test('changing a password needs the current one (a wrong one is invalid_grant) and ends every other login', async () => {
    const username = nextName('changer');
    await service.createUser(username, PASSWORD);
    const other = await service.accessToken(username, PASSWORD);
    const token = await service.accessToken(username, PASSWORD);
    const missing = await expectStatus(
      service.call('/mfa/password/', { method: 'PUT', token, body: { new_password: 'another passphrase' } }),
      400,
    );
    assert.match(missing.error_description, /current_password/);
    const wrong = await expectStatus(
      service.call('/mfa/password/', {
        method: 'PUT',
        token,
        body: { current_password: 'not it at all', new_password: 'another passphrase' },
      }),
      400,
    );
    assert.equal(wrong.error, 'invalid_grant');
    await expectStatus(
      service.call('/mfa/password/', {
        method: 'PUT',
        token,
        body: { current_password: PASSWORD, new_password: 'another passphrase' },
      }),
      204,
    );
    await expectStatus(service.call('/mfa/', { token: other }), 401);
    await expectStatus(service.call('/mfa/', { token }), 200);
    await expectStatus(service.login(username, PASSWORD), 400);
    await expectStatus(service.login(username, 'another passphrase'), 200);
  });
});
