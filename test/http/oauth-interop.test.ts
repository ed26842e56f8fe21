import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
} from 'jose';
import * as oauth from 'oauth4webapi';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const PASSWORD = 'correct horse battery';
const USERNAME = 'interop-user';

/**
 * The libraries check that the issuer they discover is the one they asked for, and call the URLs
 * the metadata names; so the service's ISSUER must be an address it answers on. The service
 * listens on a port chosen at start, so a proxy on a port known beforehand stands in front of it.
 */
const upstream = { host: '127.0.0.1', port: 0 };
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let service: Service;
let issuer: URL;
let userId: string;
let confidential: { client_id: string; client_secret: string };

// oauth4webapi refuses http:// unless told otherwise; the test server has no TLS.
const insecure = { [oauth.allowInsecureRequests]: true } as const;

before(async () => {
  proxy = await startTcpProxy(upstream);
  const issuerUrl = `http://127.0.0.1:${proxy.port}`;
  service = await startService({ env: { ISSUER: issuerUrl } });
  upstream.port = Number(new URL(service.url).port);
  issuer = new URL(issuerUrl);
  userId = await service.createUser(USERNAME, PASSWORD);
  confidential = await expectStatus(
    service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body: { name: 'interop client' } }),
    201,
  );
});
after(async () => {
  await service.close();
  await proxy.cut();
});

async function discover(): Promise<oauth.AuthorizationServer> {
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

function clientOf(credentials: { client_id: string }): oauth.Client {
  return { client_id: credentials.client_id };
}

/** The password grant through oauth4webapi's generic token request. */
async function passwordGrant(
  as: oauth.AuthorizationServer,
  auth: oauth.ClientAuth = oauth.ClientSecretBasic(confidential.client_secret),
  parameters: Record<string, string> = {},
) {
  const response = await oauth.genericTokenEndpointRequest(
    as,
    clientOf(confidential),
    auth,
    'password',
    { username: USERNAME, password: PASSWORD, ...parameters },
    insecure,
  );
  return oauth.processGenericTokenEndpointResponse(as, clientOf(confidential), response);
}

async function introspect(as: oauth.AuthorizationServer, token: string) {
  const response = await oauth.introspectionRequest(
    as,
    clientOf(confidential),
    oauth.ClientSecretBasic(confidential.client_secret),
    token,
    insecure,
  );
  return oauth.processIntrospectionResponse(as, clientOf(confidential), response);
}

/** What a resource server does with a bearer token: verify it against the issuer's published keys. */
function verifyAsResourceServer(token: string, jwks: ReturnType<typeof createRemoteJWKSet>) {
  return jwtVerify(token, jwks, {
    issuer: issuer.origin,
    typ: 'at+jwt',
    algorithms: ['EdDSA', 'ES256'],
    // RFC 9068 §2.2: the claims a JWT access token must carry.
    requiredClaims: ['iss', 'exp', 'aud', 'sub', 'client_id', 'iat', 'jti'],
    currentDate: service.clock.now(),
  });
}

describe('a resource server verifying access tokens with jose', () => {
  test('createRemoteJWKSet on the metadata’s jwks_uri verifies our tokens, claims and all', async () => {
    const metadata = await expectStatus(fetch(new URL('/.well-known/oauth-authorization-server', issuer)), 200);
    assert.equal(metadata.issuer, issuer.origin);
    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
    const tokens = await expectStatus(service.login(USERNAME, PASSWORD, { scope: 'openid profile' }), 200);

    const { payload, protectedHeader } = await verifyAsResourceServer(tokens.access_token, jwks);
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.equal(typeof protectedHeader.kid, 'string');
    assert.equal(payload.iss, issuer.origin);
    assert.equal(payload.sub, userId);
    assert.equal(payload.client_id, 'public');
    assert.equal(payload.scope, 'openid profile');
    assert.deepEqual(payload.amr, ['pwd']);
    assert.equal(typeof payload.auth_time, 'number');
    assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), tokens.expires_in);
  });

  test('the same key set refuses a token signed by another key, an altered one, and an expired one', async () => {
    const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', issuer));
    const { access_token } = await expectStatus(service.login(USERNAME, PASSWORD), 200);
    await verifyAsResourceServer(access_token, jwks);

    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT(decodeJwt(access_token))
      .setProtectedHeader(decodeProtectedHeader(access_token) as { alg: string })
      .sign(privateKey);
    await assert.rejects(verifyAsResourceServer(forged, jwks), joseErrors.JWSSignatureVerificationFailed);

    const [header, , signature] = access_token.split('.');
    const raised = Buffer.from(JSON.stringify({ ...decodeJwt(access_token), amr: ['pwd', 'sms'] })).toString(
      'base64url',
    );
    await assert.rejects(
      verifyAsResourceServer(`${header}.${raised}.${signature}`, jwks),
      joseErrors.JWSSignatureVerificationFailed,
    );

    await assert.rejects(
      jwtVerify(access_token, jwks, {
        issuer: issuer.origin,
        typ: 'at+jwt',
        currentDate: new Date(service.clock.now().getTime() + 3_600_000),
      }),
      joseErrors.JWTExpired,
    );
  });

  test('after a key rotation it picks up the new key and still verifies tokens signed by the old one', async () => {
    // Without a cooldown the key set fetches again on the first unknown kid, as it would 30 s later by default.
    const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', issuer), { cooldownDuration: 0 });
    const before = await expectStatus(service.login(USERNAME, PASSWORD), 200);
    const oldKid = decodeProtectedHeader(before.access_token).kid;
    await verifyAsResourceServer(before.access_token, jwks);

    const { kid: newKid } = await expectStatus(
      service.call('/admin/signing-keys', { method: 'POST', token: ADMIN_TOKEN }),
      201,
    );
    assert.notEqual(newKid, oldKid);
    const afterRotation = await expectStatus(service.login(USERNAME, PASSWORD), 200);
    assert.equal(decodeProtectedHeader(afterRotation.access_token).kid, newKid);

    assert.equal((await verifyAsResourceServer(afterRotation.access_token, jwks)).payload.sub, userId);
    assert.equal((await verifyAsResourceServer(before.access_token, jwks)).payload.sub, userId);
    // A resource server that never saw the old key can still fetch it, while tokens signed by it live.
    const fresh = createRemoteJWKSet(new URL('/.well-known/jwks.json', issuer));
    assert.equal((await verifyAsResourceServer(before.access_token, fresh)).protectedHeader.kid, oldKid);
  });

  test('oauth4webapi’s RFC 9068 validator accepts our access tokens too', async () => {
    const as = await discover();
    const { access_token } = await expectStatus(service.login(USERNAME, PASSWORD), 200);
    const request = new Request(new URL('/mfa/', issuer), { headers: { authorization: `Bearer ${access_token}` } });
    const claims = await oauth.validateJwtAccessToken(as, request, issuer.origin, insecure);
    assert.equal(claims.sub, userId);
    assert.equal(claims.client_id, 'public');
  });
});

describe('a client using oauth4webapi', () => {
  test('discovers the server from its issuer (RFC 8414)', async () => {
    const as = await discover();
    assert.equal(as.issuer, issuer.origin);
    assert.equal(as.token_endpoint, new URL('/mfa/oauth2/token/', issuer).href);
    assert.equal(as.revocation_endpoint, new URL('/mfa/oauth2/revoke/', issuer).href);
    assert.equal(as.introspection_endpoint, new URL('/mfa/oauth2/introspect/', issuer).href);
    assert.ok(as.grant_types_supported?.includes('password'));
    assert.ok(as.grant_types_supported?.includes('refresh_token'));
    assert.ok(as.token_endpoint_auth_methods_supported?.includes('client_secret_basic'));
  });

  test('a confidential client logs in, refreshes, introspects and revokes (client_secret_basic)', async () => {
    const as = await discover();
    const client = clientOf(confidential);
    const auth = oauth.ClientSecretBasic(confidential.client_secret);

    const login = await passwordGrant(as, auth, { scope: 'profile' });
    assert.equal(login.token_type, 'bearer');
    assert.equal(login.scope, 'profile');
    assert.equal(typeof login.refresh_token, 'string');
    assert.equal(decodeJwt(login.access_token).client_id, confidential.client_id);

    const refreshResponse = await oauth.refreshTokenGrantRequest(
      as,
      client,
      auth,
      login.refresh_token as string,
      insecure,
    );
    const refreshed = await oauth.processRefreshTokenResponse(as, client, refreshResponse);
    assert.notEqual(refreshed.refresh_token, login.refresh_token);
    assert.notEqual(refreshed.access_token, login.access_token);
    assert.deepEqual(decodeJwt(refreshed.access_token).amr, ['pwd']);

    const access = await introspect(as, refreshed.access_token);
    assert.equal(access.active, true);
    assert.equal(access.sub, userId);
    assert.equal(access.client_id, confidential.client_id);
    assert.equal(access.scope, 'profile');
    assert.equal(access.jti, decodeJwt(refreshed.access_token).jti);
    assert.equal((await introspect(as, refreshed.refresh_token as string)).active, true);
    assert.deepEqual(await introspect(as, login.refresh_token as string), { active: false });

    const revokeResponse = await oauth.revocationRequest(as, client, auth, refreshed.refresh_token as string, {
      ...insecure,
      additionalParameters: { token_type_hint: 'refresh_token' },
    });
    assert.equal(await oauth.processRevocationResponse(revokeResponse), undefined);
    assert.deepEqual(await introspect(as, refreshed.refresh_token as string), { active: false });
    // The refresh token took its login with it.
    assert.deepEqual(await introspect(as, refreshed.access_token), { active: false });
    await expectStatus(service.call('/mfa/', { token: refreshed.access_token }), 401);
  });

  test('client_secret_post works as well, and an access token can be revoked alone', async () => {
    const as = await discover();
    const client = clientOf(confidential);
    const auth = oauth.ClientSecretPost(confidential.client_secret);
    const tokens = await passwordGrant(as, auth);
    assert.equal(decodeJwt(tokens.access_token).client_id, confidential.client_id);
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200);

    const revokeResponse = await oauth.revocationRequest(as, client, auth, tokens.access_token, insecure);
    assert.equal(await oauth.processRevocationResponse(revokeResponse), undefined);
    assert.deepEqual(await introspect(as, tokens.access_token), { active: false });
    await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 401);
  });

  test('a public client (no authentication) logs in and refreshes', async () => {
    const as = await discover();
    const client = { client_id: 'public' };
    const response = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      'password',
      { username: USERNAME, password: PASSWORD },
      insecure,
    );
    const tokens = await oauth.processGenericTokenEndpointResponse(as, client, response);
    assert.equal(decodeJwt(tokens.access_token).client_id, 'public');
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token as string, insecure),
    );
    await expectStatus(service.call('/mfa/', { token: refreshed.access_token }), 200);
  });

  test('with MFA on, the first answer asks for the code and a second request with mfa_code gets tokens', async () => {
    const phone = nextPhone();
    const { username } = await service.createUserWithMfa('interop-mfa', PASSWORD, phone);
    const as = await discover();
    const client = clientOf(confidential);
    const auth = oauth.ClientSecretBasic(confidential.client_secret);
    const grant = (extra: Record<string, string> = {}) =>
      oauth.genericTokenEndpointRequest(
        as,
        client,
        auth,
        'password',
        { username, password: PASSWORD, ...extra },
        insecure,
      );

    // Not a token response, so the client reads it before handing anything to processing.
    const challenge = await grant();
    assert.equal(challenge.status, 200);
    assert.deepEqual(await challenge.json(), { mfa_required: true, mfa_type: 'sms' });

    const code = service.twilio.lastCodeFor(`+${phone}`);
    const tokens = await oauth.processGenericTokenEndpointResponse(as, client, await grant({ mfa_code: code }));
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd', 'sms']);
  });

  test('errors reach the client as the OAuth errors it knows', async () => {
    const as = await discover();
    const client = clientOf(confidential);

    await assert.rejects(
      passwordGrant(as, oauth.ClientSecretBasic(confidential.client_secret), { password: 'wrong password' }),
      (error: unknown) =>
        error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant' && error.status === 400,
    );

    // A wrong secret is a 401 with a Basic challenge (RFC 6749 §5.2).
    await assert.rejects(passwordGrant(as, oauth.ClientSecretBasic('wrong-secret')), (error: unknown) => {
      assert.ok(error instanceof oauth.WWWAuthenticateChallengeError, String(error));
      assert.equal(error.status, 401);
      assert.equal(error.cause[0]?.scheme, 'basic');
      return true;
    });

    const tokens = await passwordGrant(as);
    const auth = oauth.ClientSecretBasic(confidential.client_secret);
    await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token as string, insecure),
    );
    await assert.rejects(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token as string, insecure),
      ),
      (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant',
    );

    // Introspection needs the client's credentials.
    const anonymous = await oauth.introspectionRequest(as, client, oauth.None(), tokens.access_token, insecure);
    await assert.rejects(
      oauth.processIntrospectionResponse(as, client, anonymous),
      (error: unknown) => error instanceof oauth.WWWAuthenticateChallengeError && error.status === 401,
    );
  });
});
