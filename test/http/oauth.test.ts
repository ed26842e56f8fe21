import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  type JWK,
  jwtVerify,
  SignJWT,
} from 'jose';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';
const ISSUER = 'https://mfa.example.test';
const ACCESS_TTL = 600;
const REFRESH_TTL = 86_400;

const TOKEN_PATH = '/mfa/oauth2/token/';
const REVOKE_PATH = '/mfa/oauth2/revoke/';
const INTROSPECT_PATH = '/mfa/oauth2/introspect/';

/** Members a JWK may only have when it holds private or symmetric key material (RFC 7518 §6). */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** The key type each signing algorithm needs (RFC 7518 §3, RFC 8037 §3.1). */
const KEY_TYPES = {
  RS256: { kty: 'RSA', crv: undefined },
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
};
const SIGNING_ALGS = Object.keys(KEY_TYPES).sort();

let service: Service;
let userId: string;
/** A confidential client that introspects (a resource server would hold one like it). */
let resourceServer: OAuthClient;
before(async () => {
  // No SECRET_KEY here: the signing-key test uses this service as its control.
  service = await startService({
    env: { ISSUER, ACCESS_TOKEN_TTL: String(ACCESS_TTL), REFRESH_TOKEN_TTL: String(REFRESH_TTL) },
  });
  userId = await service.createUser('oauth-user', PASSWORD);
  resourceServer = await registerClient(service, 'resource server');
});
after(() => service.close());

interface OAuthClient {
  client_id: string;
  client_secret: string;
}

interface Tokens {
  access_token: string;
  expires_in: number;
  token_type: string;
  scope: string;
  refresh_token: string;
}

async function registerClient(on: Service, name: string): Promise<OAuthClient> {
  const { client_id, client_secret } = await expectStatus(
    on.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body: { name } }),
    201,
  );
  return { client_id, client_secret };
}

/** RFC 6749 §2.3.1: id and secret form-encoded, then joined and base64-encoded. */
function basic(client: OAuthClient) {
  const pair = `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** POSTs a form (as RFC 6749, 7009 and 7662 define these requests), authenticating with HTTP Basic when given a client. */
function postForm(path: string, fields: Record<string, string>, client?: OAuthClient, on: Service = service) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (client) headers.authorization = basic(client);
  return on.call(path, { method: 'POST', headers, body: new URLSearchParams(fields).toString() });
}

/** A password-grant login of oauth-user, as the public client or as `client`. */
async function login(client?: OAuthClient, extra: Record<string, string> = {}): Promise<Tokens> {
  const fields = { grant_type: 'password', username: 'oauth-user', password: PASSWORD, ...extra };
  return expectStatus(postForm(TOKEN_PATH, fields, client), 200);
}

function refresh(refreshToken: string, client?: OAuthClient, extra: Record<string, string> = {}) {
  return postForm(TOKEN_PATH, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, client);
}

function revoke(token: string, client?: OAuthClient, extra: Record<string, string> = {}) {
  return postForm(REVOKE_PATH, { token, ...extra }, client);
}

async function introspect(token: string, client: OAuthClient = resourceServer): Promise<Record<string, unknown>> {
  return expectStatus(postForm(INTROSPECT_PATH, { token }, client), 200);
}

/** Awaits an OAuth error answer and returns its `error` code after checking the status and the body's shape. */
async function oauthError(pending: Promise<Response>, status: number): Promise<string> {
  const response = await pending;
  const text = await response.text();
  assert.equal(response.status, status, text);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], text);
  assert.equal(typeof body.error_description, 'string');
  return body.error;
}

/** GET /mfa/ with the access token: 200 while it is good, 401 invalid_token once it is not. */
async function mfaStatusWith(accessToken: string): Promise<number> {
  const response = await service.call('/mfa/', { token: accessToken });
  if (response.status === 401) {
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_token');
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/);
  } else {
    await response.body?.cancel();
  }
  return response.status;
}

async function expectInactive(token: string, context: string) {
  assert.deepEqual(await introspect(token), { active: false }, context);
}

async function expectFamilyRevoked(tokens: Tokens[], context: string) {
  for (const [index, pair] of tokens.entries()) {
    assert.equal(await mfaStatusWith(pair.access_token), 401, `${context}: access token ${index}`);
    await expectInactive(pair.access_token, `${context}: access token ${index}`);
    await expectInactive(pair.refresh_token, `${context}: refresh token ${index}`);
  }
  const last = tokens.at(-1);
  assert.ok(last);
  assert.equal(await oauthError(refresh(last.refresh_token), 400), 'invalid_grant', `${context}: newest refresh`);
}

/** A random opaque string shaped like one of our refresh tokens. */
function unknownToken() {
  return randomBytes(32).toString('base64url');
}

describe('refresh rotation (RFC 6749 §6)', () => {
  test('each refresh answers a new access and refresh token and spends the refresh token it used', async () => {
    const first = await login();
    const pairs = [first];
    for (let round = 0; round < 3; round += 1) {
      const previous = pairs.at(-1) as Tokens;
      const next = (await expectStatus(refresh(previous.refresh_token), 200)) as Tokens;
      assert.deepEqual(Object.keys(next).sort(), [
        'access_token',
        'expires_in',
        'refresh_token',
        'scope',
        'token_type',
      ]);
      assert.equal(next.token_type, 'Bearer');
      assert.equal(next.expires_in, ACCESS_TTL);
      const claims = decodeJwt(next.access_token);
      assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), ACCESS_TTL);
      assert.equal(claims.sub, userId);
      assert.equal(claims.client_id, 'public');
      assert.equal(await mfaStatusWith(next.access_token), 200);
      // Spent, not revoked: introspection tells, without presenting it again at the token endpoint.
      await expectInactive(previous.refresh_token, `round ${round}: the used refresh token`);
      assert.equal((await introspect(next.refresh_token)).active, true);
      pairs.push(next);
    }
    assert.equal(new Set(pairs.map((pair) => pair.refresh_token)).size, pairs.length, 'refresh tokens repeat');
    assert.equal(new Set(pairs.map((pair) => decodeJwt(pair.access_token).jti)).size, pairs.length, 'jti repeats');
    for (const pair of pairs) assert.ok(Buffer.from(pair.refresh_token, 'base64url').length >= 32);
    // Rotation spends the refresh token only: earlier access tokens live until they expire.
    assert.equal(await mfaStatusWith(first.access_token), 200);
  });

  test('refreshed access tokens keep the login’s amr and auth_time, with a new iat and exp', async () => {
    const phone = nextPhone();
    const { username } = await service.createUserWithMfa('oauth-mfa', PASSWORD, phone);
    assert.deepEqual(await expectStatus(service.login(username, PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'sms',
    });
    const code = service.twilio.lastCodeFor(`+${phone}`);
    const loginTokens = await expectStatus(service.login(username, PASSWORD, { mfa_code: code }), 200);
    const loginClaims = decodeJwt(loginTokens.access_token);
    assert.deepEqual(loginClaims.amr, ['pwd', 'sms']);

    service.clock.advance(120);
    const once = await expectStatus(refresh(loginTokens.refresh_token), 200);
    service.clock.advance(120);
    const twice = await expectStatus(refresh(once.refresh_token), 200);
    for (const [name, tokens] of [
      ['first refresh', once],
      ['second refresh', twice],
    ] as const) {
      const claims = decodeJwt(tokens.access_token);
      assert.deepEqual(claims.amr, ['pwd', 'sms'], name);
      assert.equal(claims.auth_time, loginClaims.auth_time, name);
      assert.equal(claims.sub, loginClaims.sub, name);
      assert.equal(claims.scope, loginClaims.scope, name);
    }
    const twiceClaims = decodeJwt(twice.access_token);
    assert.equal(twiceClaims.iat, (loginClaims.iat ?? 0) + 240);
    assert.equal(twiceClaims.exp, (loginClaims.exp ?? 0) + 240);
    // The refreshed token still counts as a second-factor login where that matters.
    await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: twice.access_token }), 200);
  });

  test('a refresh may ask for less scope than the login had, for that access token only; never more (400 invalid_scope)', async () => {
    const granted = await login(undefined, { scope: 'openid profile' });
    assert.equal(granted.scope, 'openid profile');
    const narrowed = await expectStatus(refresh(granted.refresh_token, undefined, { scope: 'profile' }), 200);
    assert.equal(narrowed.scope, 'profile');
    assert.equal(decodeJwt(narrowed.access_token).scope, 'profile');
    // RFC 6749 §6: the new refresh token keeps the login's scope; asking nothing gets all of it.
    const whole = await expectStatus(refresh(narrowed.refresh_token), 200);
    assert.equal(whole.scope, 'openid profile');
    assert.equal(decodeJwt(whole.access_token).scope, 'openid profile');
    const again = await expectStatus(refresh(whole.refresh_token, undefined, { scope: 'openid profile' }), 200);
    assert.equal(again.scope, 'openid profile');
    assert.equal(await oauthError(refresh(again.refresh_token, undefined, { scope: 'admin' }), 400), 'invalid_scope');
  });

  test('a refresh_token grant without refresh_token is invalid_request; an unknown one is invalid_grant', async () => {
    assert.equal(await oauthError(postForm(TOKEN_PATH, { grant_type: 'refresh_token' }), 400), 'invalid_request');
    for (const token of [unknownToken(), 'not-a-token']) {
      assert.equal(await oauthError(refresh(token), 400), 'invalid_grant', token);
    }
  });
});

describe('refresh-token reuse', () => {
  test('a spent refresh token presented again is invalid_grant and revokes every token of its login', async () => {
    const first = await login();
    const second = await expectStatus(refresh(first.refresh_token), 200);
    const third = await expectStatus(refresh(second.refresh_token), 200);
    const otherLogin = await login();
    assert.equal(await mfaStatusWith(third.access_token), 200);

    assert.equal(await oauthError(refresh(first.refresh_token), 400), 'invalid_grant');
    await expectFamilyRevoked([first, second, third], 'after reuse of the oldest refresh token');

    // Another login of the same user is a different family and keeps working.
    assert.equal(await mfaStatusWith(otherLogin.access_token), 200);
    const otherNext = await expectStatus(refresh(otherLogin.refresh_token), 200);
    assert.equal(await mfaStatusWith(otherNext.access_token), 200);
  });

  test('reuse of the token just before the newest one revokes the newest too', async () => {
    const first = await login();
    const second = await expectStatus(refresh(first.refresh_token), 200);
    const third = await expectStatus(refresh(second.refresh_token), 200);
    assert.equal(await oauthError(refresh(second.refresh_token), 400), 'invalid_grant');
    await expectFamilyRevoked([first, second, third], 'after reuse of the middle refresh token');
  });

  test('of 10 simultaneous refreshes with one token, one gets tokens, the others are invalid_grant and revoke the login', async () => {
    // A few rounds, since a race that revokes too early shows only in some interleavings.
    for (let round = 0; round < 5; round += 1) {
      const first = await login();
      const responses = await Promise.all(Array.from({ length: 10 }, () => refresh(first.refresh_token)));
      const bodies = await Promise.all(
        responses.map(async (response) => ({
          status: response.status,
          ...((await response.json()) as Partial<Tokens> & { error?: string }),
        })),
      );
      const winners = bodies.filter((body) => body.status === 200);
      assert.equal(winners.length, 1, JSON.stringify(bodies.map((body) => body.status)));
      for (const body of bodies.filter((candidate) => candidate.status !== 200)) {
        assert.equal(body.status, 400);
        assert.equal(body.error, 'invalid_grant');
      }
      // The losers presented a spent token, so the login, with the tokens the winner got, is revoked.
      await expectFamilyRevoked([first, winners[0] as Tokens], `round ${round}`);
    }
  });

  test('a refresh token works only for the client it was issued to; others get invalid_grant', async () => {
    const confidential = await registerClient(service, 'refresh-owner');
    const other = await registerClient(service, 'refresh-other');
    const publicTokens = await login();
    const confidentialTokens = await login(confidential);

    assert.equal(await oauthError(refresh(publicTokens.refresh_token, confidential), 400), 'invalid_grant');
    assert.equal(await oauthError(refresh(confidentialTokens.refresh_token), 400), 'invalid_grant');
    assert.equal(await oauthError(refresh(confidentialTokens.refresh_token, other), 400), 'invalid_grant');
    // client_secret_post names the client too.
    const postFields = { grant_type: 'refresh_token', refresh_token: confidentialTokens.refresh_token, ...other };
    assert.equal(await oauthError(postForm(TOKEN_PATH, postFields), 400), 'invalid_grant');

    const refreshed = await expectStatus(refresh(confidentialTokens.refresh_token, confidential), 200);
    assert.equal(decodeJwt(refreshed.access_token).client_id, confidential.client_id);
    // Auth method "none" (RFC 6749 §3.2.1): the public client may name itself with client_id alone.
    const named = await expectStatus(
      postForm(TOKEN_PATH, {
        grant_type: 'refresh_token',
        refresh_token: publicTokens.refresh_token,
        client_id: 'public',
      }),
      200,
    );
    assert.equal(decodeJwt(named.access_token).client_id, 'public');
  });

  test('a refresh token expires after REFRESH_TOKEN_TTL: then it is invalid_grant', async () => {
    const early = await login();
    const late = await login();
    assert.equal(
      (await introspect(late.refresh_token)).exp,
      Math.floor(service.clock.now().getTime() / 1000) + REFRESH_TTL,
    );
    service.clock.advance(REFRESH_TTL - 5);
    await expectStatus(refresh(early.refresh_token), 200);
    service.clock.advance(10);
    assert.equal(await oauthError(refresh(late.refresh_token), 400), 'invalid_grant');
    await expectInactive(late.refresh_token, 'an expired refresh token');
  });
});

describe('revocation (RFC 7009)', () => {
  test('answers 200 for unknown, malformed, forged and already revoked tokens', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT({ sub: userId, client_id: 'public' })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: decodeProtectedHeader((await login()).access_token).kid })
      .sign(privateKey);
    const revoked = (await login()).refresh_token;
    await expectStatus(revoke(revoked), 200);
    for (const token of [unknownToken(), 'x', 'abc.def.ghi', forged, revoked, ADMIN_TOKEN]) {
      const response = await revoke(token);
      assert.equal(response.status, 200, `${token}: ${await response.text()}`);
    }
    for (const hint of ['access_token', 'refresh_token', 'something_else']) {
      await expectStatus(revoke(unknownToken(), undefined, { token_type_hint: hint }), 200);
    }
  });

  test('a request without a token is 400 invalid_request', async () => {
    assert.equal(await oauthError(postForm(REVOKE_PATH, {}), 400), 'invalid_request');
    assert.equal(await oauthError(postForm(REVOKE_PATH, { token: '' }), 400), 'invalid_request');
  });

  test('revoking the newest refresh token revokes its login: every refresh and access token of it', async () => {
    const first = await login();
    const second = await expectStatus(refresh(first.refresh_token), 200);
    const otherLogin = await login();
    await expectStatus(revoke(second.refresh_token, undefined, { token_type_hint: 'refresh_token' }), 200);
    await expectFamilyRevoked([first, second], 'after revoking the newest refresh token');
    assert.equal(await mfaStatusWith(otherLogin.access_token), 200);
    await expectStatus(refresh(otherLogin.refresh_token), 200);
  });

  test('revoking a spent refresh token, under a wrong token_type_hint, still revokes its login', async () => {
    const first = await login();
    const second = await expectStatus(refresh(first.refresh_token), 200);
    // §2.1: a server that cannot find the token under the hint extends its search.
    await expectStatus(revoke(first.refresh_token, undefined, { token_type_hint: 'access_token' }), 200);
    await expectFamilyRevoked([first, second], 'after revoking a spent refresh token');
  });

  test('a refresh racing the revocation of its refresh token leaves no live token behind', async () => {
    for (let round = 0; round < 5; round += 1) {
      const first = await login();
      const [refreshed] = await Promise.all([refresh(first.refresh_token), revoke(first.refresh_token)]);
      const body = (await refreshed.json()) as Partial<Tokens> & { error?: string };
      if (refreshed.status === 200) {
        await expectFamilyRevoked([first, body as Tokens], `round ${round}`);
      } else {
        assert.equal(body.error, 'invalid_grant', `round ${round}: ${JSON.stringify(body)}`);
        await expectFamilyRevoked([first], `round ${round}`);
      }
    }
  });

  test('a revoked access token is refused by GET /mfa/ with 401 and reported inactive; other tokens are not', async () => {
    const target = await login();
    const bystander = await login();
    assert.equal(await mfaStatusWith(target.access_token), 200);
    assert.equal((await introspect(target.access_token)).active, true);

    await expectStatus(revoke(target.access_token, undefined, { token_type_hint: 'access_token' }), 200);
    assert.equal(await mfaStatusWith(target.access_token), 401);
    await expectInactive(target.access_token, 'a revoked access token');
    assert.equal(await mfaStatusWith(bystander.access_token), 200);
    assert.equal((await introspect(bystander.access_token)).active, true);
  });

  test('a confidential client’s tokens are revoked only with that client’s credentials', async () => {
    const owner = await registerClient(service, 'revoke-owner');
    const other = await registerClient(service, 'revoke-other');
    const tokens = await login(owner);

    for (const token of [tokens.refresh_token, tokens.access_token]) {
      await expectStatus(revoke(token), 200);
      await expectStatus(revoke(token, other), 200);
      const wrongSecret = { ...owner, client_secret: `${owner.client_secret}x` };
      assert.equal(await oauthError(revoke(token, wrongSecret), 401), 'invalid_client');
      assert.equal((await introspect(token)).active, true, 'revoked by someone other than its client');
    }
    assert.equal(await mfaStatusWith(tokens.access_token), 200);

    // client_secret_post works as well as Basic.
    await expectStatus(postForm(REVOKE_PATH, { token: tokens.access_token, ...owner }), 200);
    await expectInactive(tokens.access_token, 'revoked by its client');
    await expectStatus(revoke(tokens.refresh_token, owner), 200);
    await expectInactive(tokens.refresh_token, 'revoked by its client');
  });
});

describe('introspection (RFC 7662)', () => {
  test('needs client authentication: none, the public client or a wrong secret get 401 invalid_client', async () => {
    const { access_token } = await login();
    const attempts: [string, number, Promise<Response>][] = [
      ['no credentials', 401, postForm(INTROSPECT_PATH, { token: access_token })],
      ['client_id=public', 401, postForm(INTROSPECT_PATH, { token: access_token, client_id: 'public' })],
      [
        'client_id=public with a secret',
        401,
        postForm(INTROSPECT_PATH, { token: access_token, client_id: 'public', client_secret: 'anything' }),
      ],
      [
        'Basic public:',
        401,
        postForm(INTROSPECT_PATH, { token: access_token }, { client_id: 'public', client_secret: '' }),
      ],
      [
        'a wrong secret',
        401,
        postForm(INTROSPECT_PATH, { token: access_token }, { ...resourceServer, client_secret: 'wrong-secret' }),
      ],
      [
        'an unknown client',
        401,
        postForm(INTROSPECT_PATH, { token: access_token, client_id: 'no-such-client', client_secret: 'secret' }),
      ],
      // Malformed rather than wrong: RFC 6749 §5.2 calls that invalid_request.
      [
        'the secret without its client_id',
        400,
        postForm(INTROSPECT_PATH, { token: access_token, client_secret: resourceServer.client_secret }),
      ],
    ];
    for (const [name, status, pending] of attempts) {
      const response = await pending;
      const text = await response.text();
      assert.equal(response.status, status, `${name}: ${text}`);
      assert.deepEqual(JSON.parse(text), {
        error: status === 401 ? 'invalid_client' : 'invalid_request',
        error_description: JSON.parse(text).error_description,
      });
      if (status === 401) assert.match(response.headers.get('www-authenticate') ?? '', /^Basic\b/, name);
    }
    // Control: the token was good, and a client that authenticates learns so.
    assert.equal((await introspect(access_token)).active, true);
  });

  test('an active access token: its sub, client_id, scope, exp, iat, jti, amr and token_type Bearer', async () => {
    const owner = await registerClient(service, 'introspected');
    const tokens = await login(owner, { scope: 'openid profile' });
    const claims = decodeJwt(tokens.access_token);
    for (const answer of [
      await introspect(tokens.access_token),
      // client_secret_post, and by another client than the token's: resource servers introspect any token.
      await expectStatus(postForm(INTROSPECT_PATH, { token: tokens.access_token, ...owner }), 200),
    ]) {
      assert.equal(answer.active, true);
      assert.equal(answer.token_type, 'Bearer');
      assert.equal(answer.sub, userId);
      assert.equal(answer.client_id, owner.client_id);
      assert.equal(answer.scope, 'openid profile');
      assert.equal(answer.iat, claims.iat);
      assert.equal(answer.exp, claims.exp);
      assert.equal(answer.jti, claims.jti);
      assert.deepEqual(answer.amr, ['pwd']);
    }
  });

  test('an active refresh token: its sub, client_id, scope, exp, iat, jti, amr and token_type', async () => {
    const tokens = await login(undefined, { scope: 'profile' });
    const answer = await introspect(tokens.refresh_token);
    const nowSeconds = Math.floor(service.clock.now().getTime() / 1000);
    assert.equal(answer.active, true);
    assert.equal(answer.token_type, 'refresh_token');
    assert.equal(answer.sub, userId);
    assert.equal(answer.client_id, 'public');
    assert.equal(answer.scope, 'profile');
    assert.equal(answer.iat, nowSeconds);
    assert.equal(answer.exp, nowSeconds + REFRESH_TTL);
    assert.equal(typeof answer.jti, 'string');
    assert.notEqual(answer.jti, decodeJwt(tokens.access_token).jti);
    assert.deepEqual(answer.amr, ['pwd']);
    // The answer describes the token; it never repeats a secret.
    assert.ok(!JSON.stringify(answer).includes(tokens.refresh_token));
  });

  test('exactly {"active":false} for unknown, malformed, forged, spent, revoked and expired tokens', async () => {
    const real = await login();
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT(decodeJwt(real.access_token))
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: decodeProtectedHeader(real.access_token).kid })
      .sign(privateKey);
    const [header, payload] = real.access_token.split('.');
    const altered = `${header}.${Buffer.from(JSON.stringify({ ...decodeJwt(real.access_token), sub: 'someone-else' })).toString('base64url')}.${real.access_token.split('.')[2]}`;
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${payload}.`;
    const spent = await login();
    await expectStatus(refresh(spent.refresh_token), 200);
    const revoked = await login();
    await expectStatus(revoke(revoked.access_token), 200);
    const revokedLogin = await login();
    await expectStatus(revoke(revokedLogin.refresh_token), 200);

    const inactive: [string, string][] = [
      ['an unknown opaque token', unknownToken()],
      ['garbage', 'x'],
      ['three garbage segments', 'abc.def.ghi'],
      ['a token signed by another key', forged],
      ['a token with an altered claim', altered],
      ['an alg: none token', unsigned],
      ['the admin token', ADMIN_TOKEN],
      ['a spent refresh token', spent.refresh_token],
      ['a revoked access token', revoked.access_token],
      ['a revoked refresh token', revokedLogin.refresh_token],
      ['an access token of a revoked login', revokedLogin.access_token],
    ];
    for (const [name, token] of inactive) await expectInactive(token, name);

    // Control: the real token was active, until it expires.
    assert.equal((await introspect(real.access_token)).active, true);
    service.clock.advance(ACCESS_TTL);
    await expectInactive(real.access_token, 'an expired access token');
    assert.equal((await introspect(real.refresh_token)).active, true);
    service.clock.advance(REFRESH_TTL);
    await expectInactive(real.refresh_token, 'an expired refresh token');
  });
});

describe('token endpoint answers are never cached', () => {
  test('Cache-Control: no-store and Pragma: no-cache on refresh answers and on every kind of error', async () => {
    const confidential = await registerClient(service, 'no-store');
    const tokens = await login(confidential);
    const refreshed = await refresh(tokens.refresh_token, confidential);
    const answers: [string, number, Response][] = [
      [
        'password grant, confidential client',
        200,
        await postForm(
          TOKEN_PATH,
          { grant_type: 'password', username: 'oauth-user', password: PASSWORD },
          confidential,
        ),
      ],
      ['refresh', 200, refreshed],
      ['reused refresh token', 400, await refresh(tokens.refresh_token, confidential)],
      ['unknown refresh token', 400, await refresh(unknownToken())],
      ['refresh without refresh_token', 400, await postForm(TOKEN_PATH, { grant_type: 'refresh_token' })],
      ['wider scope', 400, await refresh((await login()).refresh_token, undefined, { scope: 'more' })],
      [
        'wrong client secret',
        401,
        await refresh(tokens.refresh_token, { ...confidential, client_secret: 'wrong-secret' }),
      ],
      ['unsupported grant type', 400, await postForm(TOKEN_PATH, { grant_type: 'client_credentials' })],
      [
        'body over 64 KiB',
        413,
        await service.call(TOKEN_PATH, {
          method: 'POST',
          body: { grant_type: 'password', username: 'oauth-user', password: 'p'.repeat(70_000) },
        }),
      ],
      [
        'wrong content type',
        415,
        await service.call(TOKEN_PATH, {
          method: 'POST',
          body: 'grant_type=password',
          headers: { 'content-type': 'text/plain' },
        }),
      ],
      ['wrong method', 405, await service.call(TOKEN_PATH)],
    ];
    for (const [name, status, response] of answers) {
      assert.equal(response.status, status, `${name}: ${await response.text()}`);
      assert.equal(response.headers.get('cache-control'), 'no-store', name);
      assert.equal(response.headers.get('pragma'), 'no-cache', name);
    }
  });
});

describe('authorization server metadata (RFC 8414)', () => {
  async function metadata() {
    const response = await service.call('/.well-known/oauth-authorization-server');
    assert.match(response.headers.get('content-type') ?? '', /^application\/json\b/);
    return expectStatus(Promise.resolve(response), 200);
  }

  test('names the issuer, its endpoints, the grant types and the client authentication methods', async () => {
    const body = await metadata();
    assert.equal(body.issuer, ISSUER);
    assert.equal(body.token_endpoint, `${ISSUER}${TOKEN_PATH}`);
    assert.equal(body.revocation_endpoint, `${ISSUER}${REVOKE_PATH}`);
    assert.equal(body.introspection_endpoint, `${ISSUER}${INTROSPECT_PATH}`);
    assert.equal(typeof body.jwks_uri, 'string');
    assert.ok(body.jwks_uri.startsWith(`${ISSUER}/`), body.jwks_uri);
    assert.deepEqual([...body.grant_types_supported].sort(), [
      'authorization_code',
      'http://auth0.com/oauth/grant-type/mfa-otp',
      'http://auth0.com/oauth/grant-type/mfa-recovery-code',
      'password',
      'refresh_token',
      'urn:mfa-service:grant-type:passkey',
    ]);
    assert.deepEqual(body.acr_values_supported, ['phr', 'aal2', 'aal1']);
    assert.ok(Array.isArray(body.response_types_supported), 'response_types_supported is REQUIRED (§2)');
    for (const method of ['client_secret_basic', 'client_secret_post', 'none']) {
      assert.ok(body.token_endpoint_auth_methods_supported.includes(method), `token endpoint: ${method}`);
    }
    if (body.introspection_endpoint_auth_methods_supported !== undefined) {
      assert.ok(!body.introspection_endpoint_auth_methods_supported.includes('none'), 'introspection needs a client');
    }
  });

  test('every endpoint it names is served here', async () => {
    const body = await metadata();
    const path = (url: string) => new URL(url).pathname;
    const tokens = await expectStatus(
      postForm(path(body.token_endpoint), { grant_type: 'password', username: 'oauth-user', password: PASSWORD }),
      200,
    );
    assert.equal(
      (
        await expectStatus(
          postForm(path(body.introspection_endpoint), { token: tokens.access_token }, resourceServer),
          200,
        )
      ).active,
      true,
    );
    await expectStatus(postForm(path(body.revocation_endpoint), { token: tokens.refresh_token }), 200);
    await expectInactive(tokens.refresh_token, 'revoked through the advertised endpoint');
    const jwks = await expectStatus(service.call(path(body.jwks_uri)), 200);
    assert.ok(Array.isArray(jwks.keys));
  });

  test('the JWKS holds public keys only, one per algorithm (RS256, ES256, EdDSA), each with kid, alg and use "sig"', async () => {
    const jwks = await expectStatus(service.call(new URL((await metadata()).jwks_uri).pathname), 200);
    assert.deepEqual(Object.keys(jwks), ['keys']);
    const keys = jwks.keys as JWK[];
    assert.deepEqual(keys.map((key) => key.alg).sort(), ['ES256', 'EdDSA', 'RS256']);
    for (const key of keys) {
      for (const member of PRIVATE_JWK_MEMBERS)
        assert.equal(key[member as keyof JWK], undefined, `${key.kid}: ${member}`);
      assert.equal(key.kid, await calculateJwkThumbprint(key), 'kid is the RFC 7638 thumbprint');
      assert.equal(key.use, 'sig');
      assert.deepEqual(
        { kty: key.kty, crv: key.crv },
        KEY_TYPES[key.alg as keyof typeof KEY_TYPES],
        `${key.alg}: kty and crv`,
      );
    }
    const rsa = keys.find((key) => key.kty === 'RSA');
    assert.equal(Buffer.from(rsa?.n ?? '', 'base64url').length * 8, 2048, 'a 2048-bit RSA modulus');
  });

  test('access tokens are EdDSA, signed with the published EdDSA key, and verify with the JWKS', async () => {
    const jwks = await expectStatus(service.call(new URL((await metadata()).jwks_uri).pathname), 200);
    const { access_token } = await login();
    const header = decodeProtectedHeader(access_token);
    assert.equal(header.alg, 'EdDSA');
    assert.equal(
      (jwks.keys as JWK[]).find((key) => key.kid === header.kid)?.alg,
      'EdDSA',
      'the signing key is published',
    );
    const { payload } = await jwtVerify(access_token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      typ: 'at+jwt',
      currentDate: service.clock.now(),
    });
    assert.equal(payload.sub, userId);
  });
});

describe('signing-key rotation', () => {
  const SECRET_KEY = 'a-secret-key-of-at-least-32-characters!';
  const ROTATION_TTL = 300;
  let keyed: Service;
  before(async () => {
    keyed = await startService({ env: { SECRET_KEY, ACCESS_TOKEN_TTL: String(ROTATION_TTL) } });
    await keyed.createUser('rotation-user', PASSWORD);
  });
  after(() => keyed.close());

  async function publishedKeys(): Promise<JWK[]> {
    return (await expectStatus(keyed.call('/.well-known/jwks.json'), 200)).keys;
  }

  async function publishedKids(): Promise<string[]> {
    return (await publishedKeys()).map((key) => key.kid as string).sort();
  }

  /** The published kids of each algorithm, newest first. */
  async function publishedKidsByAlg(): Promise<Record<string, string[]>> {
    const byAlg: Record<string, string[]> = {};
    for (const key of await publishedKeys()) {
      byAlg[key.alg as string] = [...(byAlg[key.alg as string] ?? []), key.kid as string];
    }
    return byAlg;
  }

  function rotate(authorization = `Bearer ${ADMIN_TOKEN}`) {
    return keyed.call('/admin/signing-keys', { method: 'POST', headers: { authorization } });
  }

  test('POST /admin/signing-keys needs the admin token; refused, it changes nothing', async () => {
    const published = await publishedKids();
    for (const authorization of ['Bearer wrong-admin-token-0123456789', 'Basic YWRtaW46YWRtaW4=']) {
      assert.equal(await oauthError(rotate(authorization), 401), 'invalid_token');
    }
    assert.equal(await oauthError(keyed.call('/admin/signing-keys', { method: 'POST' }), 401), 'invalid_token');
    assert.deepEqual(await publishedKids(), published);
  });

  test('new tokens carry the new kid; the old key keeps verifying, and stays published until its tokens expire', async () => {
    const oldTokens = await expectStatus(keyed.login('rotation-user', PASSWORD), 200);
    const oldKid = decodeProtectedHeader(oldTokens.access_token).kid as string;
    const before = await publishedKidsByAlg();
    assert.deepEqual(Object.keys(before).sort(), SIGNING_ALGS);
    assert.deepEqual(before.EdDSA, [oldKid]);

    const { kid: newKid } = await expectStatus(rotate(), 201);
    assert.equal(typeof newKid, 'string');
    assert.notEqual(newKid, oldKid);
    // One new key per algorithm, each listed before the one it replaces; the kid answered is the EdDSA one.
    const during = await publishedKidsByAlg();
    assert.deepEqual(Object.keys(during).sort(), SIGNING_ALGS);
    for (const alg of SIGNING_ALGS) {
      assert.equal(during[alg]?.length, 2, `${alg}: the new key and the old one`);
      assert.equal(during[alg]?.[1], before[alg]?.[0], `${alg}: the old key stays published`);
      assert.notEqual(during[alg]?.[0], before[alg]?.[0], `${alg}: a new key`);
    }
    assert.deepEqual(during.EdDSA, [newKid, oldKid]);

    const newTokens = await expectStatus(keyed.login('rotation-user', PASSWORD), 200);
    assert.equal(decodeProtectedHeader(newTokens.access_token).kid, newKid);
    const refreshed = await expectStatus(
      keyed.call(TOKEN_PATH, {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: oldTokens.refresh_token },
      }),
      200,
    );
    assert.equal(decodeProtectedHeader(refreshed.access_token).kid, newKid);
    for (const token of [oldTokens.access_token, newTokens.access_token, refreshed.access_token]) {
      await expectStatus(keyed.call('/mfa/', { token }), 200);
    }

    // Until the old key's last token expires, verifiers still need its public key.
    keyed.clock.advance(ROTATION_TTL - 5);
    await expectStatus(keyed.call('/mfa/', { token: oldTokens.access_token }), 200);
    assert.deepEqual(await publishedKidsByAlg(), during);

    keyed.clock.advance(60);
    await expectStatus(keyed.call('/mfa/', { token: oldTokens.access_token }), 401);
    const after = await publishedKidsByAlg();
    assert.deepEqual(Object.keys(after).sort(), SIGNING_ALGS);
    for (const alg of SIGNING_ALGS) assert.deepEqual(after[alg], during[alg]?.slice(0, 1), `${alg}: the new key alone`);
    const later = await expectStatus(keyed.login('rotation-user', PASSWORD), 200);
    assert.equal(decodeProtectedHeader(later.access_token).kid, newKid);
    await expectStatus(keyed.call('/mfa/', { token: later.access_token }), 200);
  });

  test('with SECRET_KEY set, no private signing key can be read in the database; without it, one can', async () => {
    // "d" in every private key; p, q, dp, dq and qi in RSA ones.
    const privateMember = /\\?"(d|p|q|dp|dq|qi)\\?"\s*:/;
    const sealedDump = await keyed.dumpDatabase();
    assert.ok(sealedDump.includes('signing_key: '), 'the dump lists the signing keys');
    assert.deepEqual(Object.keys(await publishedKidsByAlg()).sort(), SIGNING_ALGS);
    assert.ok(!privateMember.test(sealedDump), 'a private JWK member is in the database despite SECRET_KEY');
    for (const kid of await publishedKids()) assert.ok(sealedDump.includes(kid), `the key ${kid} is stored`);
    // Control: the service without SECRET_KEY keeps its key in clear, so the check above can fail.
    assert.ok(privateMember.test(await service.dumpDatabase()), 'the control service shows no private key');
  });
});
