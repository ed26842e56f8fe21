import assert from 'node:assert/strict';
import { createPublicKey, type JsonWebKey, KeyObject, sign, type webcrypto } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  jwtVerify,
  SignJWT,
} from 'jose';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
let userId: string;
let otherUserId: string;
before(async () => {
  // No SECRET_KEY: the signing key stays unsealed in the database, so tests can sign with it and forge
  // tokens whose only fault is the one under test.
  service = await startService({ env: { SECRET_KEY: '' } });
  userId = await service.createUser('ac-user', PASSWORD);
  otherUserId = await service.createUser('ac-other', PASSWORD);
});
after(() => service.close());

/** A fresh access token for ac-user (a password-only login, no client credentials). */
function realToken() {
  return service.accessToken('ac-user', PASSWORD);
}

function base64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function segments(token: string): [string, string, string] {
  const [header, payload, signature] = token.split('.');
  assert.ok(header && payload && signature !== undefined, `not a JWS: ${token}`);
  return [header, payload, signature];
}

/** The service's signing key `kid` (by default the one real tokens name), read from its database in either dialect. */
async function serviceSigningKey(kid?: string) {
  const wanted = kid ?? decodeProtectedHeader(await realToken()).kid;
  const table = (await service.dumpDatabase()).split('\n').find((line) => line.startsWith('signing_key: '));
  assert.ok(table, 'the database has a signing_key table');
  const rows = JSON.parse(table.slice('signing_key: '.length)) as {
    kid: string;
    alg: string;
    public_jwk: string;
    private_jwk: string;
  }[];
  const row = rows.find((candidate) => candidate.kid === wanted);
  assert.ok(row, `the database holds the key ${wanted}`);
  assert.ok(!row.private_jwk.startsWith('sealed:'), 'the signing key is sealed: start the service without SECRET_KEY');
  return {
    kid: row.kid,
    privateKey: await importJWK(JSON.parse(row.private_jwk) as JWK, row.alg),
    publicJwk: JSON.parse(row.public_jwk) as JWK,
  };
}

/**
 * A token with the claims of a real one (plus `claims`), signed by the service's own key, so the
 * only thing wrong with it is what the test changed.
 */
async function signedByService(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  omit: string[] = [],
): Promise<string> {
  const real = await realToken();
  const key = await serviceSigningKey(decodeProtectedHeader(real).kid);
  const payload: Record<string, unknown> = { ...decodeJwt(real), ...claims };
  for (const name of omit) delete payload[name];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: key.kid, ...header })
    .sign(key.privateKey);
}

/**
 * A real token's claims signed with the service's own `alg` key, one it keeps for ID tokens, under
 * a header naming `headerAlg`: signed by node:crypto, since jose would not sign against the header.
 */
async function signedWithIdTokenKey(alg: 'RS256' | 'ES256', headerAlg: string): Promise<string> {
  const jwks = await expectStatus(service.call('/.well-known/jwks.json'), 200);
  const kid = (jwks.keys as JWK[]).find((key) => key.alg === alg)?.kid;
  assert.ok(kid, `the JWKS has an ${alg} key`);
  const { privateKey } = await serviceSigningKey(kid);
  const signingInput = `${base64urlJson({ alg: headerAlg, typ: 'at+jwt', kid })}.${base64urlJson(decodeJwt(await realToken()))}`;
  // RS256 is PKCS #1 v1.5 with SHA-256; ES256 is ECDSA with SHA-256, r and s side by side (RFC 7518 §3.4).
  const signature = sign('sha256', Buffer.from(signingInput), {
    key: KeyObject.from(privateKey as webcrypto.CryptoKey),
    dsaEncoding: 'ieee-p1363',
  });
  return `${signingInput}.${signature.toString('base64url')}`;
}

const MFA_CALLS: { method: string; path: string; body?: () => unknown }[] = [
  { method: 'GET', path: '/mfa/' },
  { method: 'DELETE', path: '/mfa/' },
  { method: 'PUT', path: '/mfa/sms/request/', body: () => ({ phone_number: nextPhone() }) },
  { method: 'PUT', path: '/mfa/sms/verify/', body: () => ({ mfa_code: '123456' }) },
];

/** Every /mfa/ call with this Authorization header (none when undefined) answers 401 invalid_token. */
async function expectRefusedEverywhere(authorization: string | undefined) {
  const sentBefore = service.twilio.requestCount;
  for (const call of MFA_CALLS) {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
    const response = await service.call(call.path, { method: call.method, headers, body: call.body?.() });
    const text = await response.text();
    const context = `${call.method} ${call.path}: ${response.status} ${text}`;
    assert.equal(response.status, 401, context);
    const body = JSON.parse(text);
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], context);
    assert.equal(body.error, 'invalid_token', context);
    assert.equal(typeof body.error_description, 'string', context);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer\b/, context);
  }
  assert.equal(service.twilio.requestCount, sentBefore, 'a refused call sent an SMS');
}

describe('the /mfa/ endpoints refuse a missing, malformed or forged access token', () => {
  test('control: a real access token is accepted, and so is one the tests sign with the service key', async () => {
    const status = { enabled: false, challenge_type: '', phone_number: '' };
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: await realToken() }), 200), status);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: await signedByService() }), 200), status);
  });

  const cases: [string, () => Promise<string | undefined>][] = [
    ['no Authorization header', async () => undefined],
    ['the Basic scheme', async () => `Basic ${Buffer.from(`ac-user:${PASSWORD}`).toString('base64')}`],
    ['the Basic scheme carrying a real access token', async () => `Basic ${await realToken()}`],
    ['"Bearer" with nothing after it', async () => 'Bearer'],
    ['Bearer with garbage', async () => 'Bearer not-a-token'],
    ['Bearer with three garbage segments', async () => 'Bearer abc.def.ghi'],
    ['Bearer with the ADMIN_TOKEN', async () => `Bearer ${ADMIN_TOKEN}`],
    [
      'Bearer with a refresh token',
      async () => `Bearer ${(await expectStatus(service.login('ac-user', PASSWORD), 200)).refresh_token}`,
    ],
    [
      'a token signed by another Ed25519 key with the same claims and kid',
      async () => {
        const real = await realToken();
        const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
        const forged = await new SignJWT(decodeJwt(real))
          .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: decodeProtectedHeader(real).kid })
          .sign(privateKey);
        return `Bearer ${forged}`;
      },
    ],
    [
      'a token signed by another key that carries its public key in an embedded jwk header',
      async () => {
        const real = await realToken();
        const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
        const jwk = await exportJWK(publicKey);
        const forged = await new SignJWT(decodeJwt(real))
          .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', jwk })
          .sign(privateKey);
        return `Bearer ${forged}`;
      },
    ],
    [
      'an alg: none token',
      async () => {
        const [, payload] = segments(await realToken());
        return `Bearer ${base64urlJson({ alg: 'none', typ: 'at+jwt' })}.${payload}.`;
      },
    ],
    [
      'an alg: none token with the real kid',
      async () => {
        const real = await realToken();
        const [, payload] = segments(real);
        return `Bearer ${base64urlJson({ ...decodeProtectedHeader(real), alg: 'none' })}.${payload}.`;
      },
    ],
    [
      "a real token with its sub changed to another user's id, signature kept",
      async () => {
        const real = await realToken();
        const [header, , signature] = segments(real);
        return `Bearer ${header}.${base64urlJson({ ...decodeJwt(real), sub: otherUserId })}.${signature}`;
      },
    ],
    [
      'a real token with its amr raised to ["pwd","sms"], signature kept',
      async () => {
        const real = await realToken();
        const [header, , signature] = segments(real);
        return `Bearer ${header}.${base64urlJson({ ...decodeJwt(real), amr: ['pwd', 'sms'] })}.${signature}`;
      },
    ],
    [
      'a real token with its header typ changed to JWT, signature kept',
      async () => {
        const real = await realToken();
        const [, payload, signature] = segments(real);
        return `Bearer ${base64urlJson({ ...decodeProtectedHeader(real), typ: 'JWT' })}.${payload}.${signature}`;
      },
    ],
    [
      'a real token with its signature cut off',
      async () => {
        const [header, payload] = segments(await realToken());
        return `Bearer ${header}.${payload}.`;
      },
    ],
    [
      'a token signed by the service key with typ JWT',
      async () => `Bearer ${await signedByService({}, { typ: 'JWT' })}`,
    ],
    [
      'a token signed by the service key for another issuer',
      async () => `Bearer ${await signedByService({ iss: 'https://evil.example' })}`,
    ],
    [
      'a token signed by the service key that expired a second ago',
      async () => {
        const now = Math.floor(service.clock.now().getTime() / 1000);
        return `Bearer ${await signedByService({ iat: now - 901, exp: now - 1 })}`;
      },
    ],
    ['a token signed by the service key without amr', async () => `Bearer ${await signedByService({}, {}, ['amr'])}`],
    [
      'an HS256 token whose secret is the raw bytes of the public key',
      async () => {
        const real = await realToken();
        const { publicJwk } = await serviceSigningKey(decodeProtectedHeader(real).kid);
        const secret = Buffer.from(String(publicJwk.x), 'base64url');
        const forged = await new SignJWT(decodeJwt(real))
          .setProtectedHeader({ ...decodeProtectedHeader(real), alg: 'HS256' })
          .sign(secret);
        return `Bearer ${forged}`;
      },
    ],
    [
      'an HS256 token whose secret is the PEM of the public key',
      async () => {
        const real = await realToken();
        const { publicJwk } = await serviceSigningKey(decodeProtectedHeader(real).kid);
        const pem = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' }).export({
          type: 'spki',
          format: 'pem',
        });
        const forged = await new SignJWT(decodeJwt(real))
          .setProtectedHeader({ ...decodeProtectedHeader(real), alg: 'HS256' })
          .sign(Buffer.from(pem));
        return `Bearer ${forged}`;
      },
    ],
  ];
  for (const [name, authorization] of cases) {
    test(`${name}: 401 invalid_token with WWW-Authenticate: Bearer`, async () => {
      await expectRefusedEverywhere(await authorization());
    });
  }

  test("a real token's claims signed with the service's RS256 or ES256 key (kept for ID tokens): 401, whatever alg the header names", async () => {
    const jwks = createLocalJWKSet(await expectStatus(service.call('/.well-known/jwks.json'), 200));
    for (const alg of ['RS256', 'ES256'] as const) {
      const genuine = await signedWithIdTokenKey(alg, alg);
      // Control: the signature is the service's own, as any holder of the JWKS would see.
      await jwtVerify(genuine, jwks, { currentDate: service.clock.now() });
      await expectRefusedEverywhere(`Bearer ${genuine}`);
      await expectRefusedEverywhere(`Bearer ${await signedWithIdTokenKey(alg, 'EdDSA')}`);
    }
  });

  test('a real token works until its 900 seconds are up, then answers 401', async () => {
    const token = await realToken();
    service.clock.advance(899);
    await expectStatus(service.call('/mfa/', { token }), 200);
    service.clock.advance(2);
    await expectRefusedEverywhere(`Bearer ${token}`);
    // Expired says so, and what to do; a token that never was valid does not.
    const expired = await expectStatus(service.call('/mfa/', { token }), 401);
    assert.equal(expired.error_description, 'the access token has expired; refresh it or log in again');
    const garbage = await expectStatus(service.call('/mfa/', { token: `${token.slice(0, -4)}AAAA` }), 401);
    assert.doesNotMatch(garbage.error_description, /expired/);
    // A new login still works at the new time.
    await expectStatus(service.call('/mfa/', { token: await realToken() }), 200);
  });

  test('none of the refused calls changed anything', async () => {
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: await realToken() }), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: '',
    });
    assert.deepEqual(service.twilio.messages, []);
  });
});

describe('access tokens (RFC 9068)', () => {
  test('the token response and the access token have the contract shape', async () => {
    const response = await service.login('ac-user', PASSWORD);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(response.headers.get('pragma'), 'no-cache');
    const body = await expectStatus(Promise.resolve(response), 200);
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 900);
    assert.equal(typeof body.scope, 'string');
    assert.match(body.refresh_token, /^[A-Za-z0-9_-]{43,}$/);

    const header = decodeProtectedHeader(body.access_token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'EdDSA');
    assert.equal(typeof header.kid, 'string');
    assert.equal((await serviceSigningKey(header.kid)).kid, header.kid, 'kid names a key of the service');

    const claims = decodeJwt(body.access_token);
    assert.equal(claims.iss, service.config.issuer);
    assert.equal(claims.sub, userId);
    assert.equal(claims.client_id, 'public');
    assert.equal(claims.scope, body.scope);
    assert.deepEqual(claims.amr, ['pwd']);
    assert.ok(Number.isInteger(claims.iat) && Number.isInteger(claims.exp), 'iat and exp are integers');
    assert.equal(Number(claims.exp) - Number(claims.iat), 900);
    assert.equal(Number(claims.exp) - Number(claims.iat), body.expires_in);
    const now = Math.floor(service.clock.now().getTime() / 1000);
    assert.ok(Math.abs(Number(claims.iat) - now) <= 5, `iat ${claims.iat} is the service clock's now ${now}`);
    assert.equal(typeof claims.auth_time, 'number');
    assert.ok(Math.abs(Number(claims.auth_time) - Number(claims.iat)) <= 5, 'auth_time is the login time');
    assert.equal(typeof claims.jti, 'string');
    assert.ok(String(claims.jti).length > 0);

    const again = await expectStatus(service.login('ac-user', PASSWORD), 200);
    assert.notEqual(decodeJwt(again.access_token).jti, claims.jti, 'each token has its own jti');
    assert.notEqual(again.refresh_token, body.refresh_token);
  });
});

describe('the admin API', () => {
  function adminCall(path: string, body: unknown, authorization?: string) {
    return service.call(path, {
      method: 'POST',
      body,
      headers: authorization === undefined ? {} : { authorization },
    });
  }

  async function expectAdminError(pending: Promise<Response>, status: number, code: string, context: string) {
    const response = await pending;
    const text = await response.text();
    assert.equal(response.status, status, `${context}: ${text}`);
    const body = JSON.parse(text);
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], `${context}: ${text}`);
    assert.equal(body.error, code, `${context}: ${text}`);
    return response;
  }

  test('with ADMIN_TOKEN unset, every admin call answers 401 saying it takes only operators’ tokens, whatever token is sent, and start-up says so once', async () => {
    const closed = await startService({ env: { ADMIN_TOKEN: '' } });
    try {
      assert.equal(closed.config.adminToken, undefined);
      for (const authorization of [
        undefined,
        `Bearer ${ADMIN_TOKEN}`,
        'Bearer undefined',
        'Bearer null',
        'Bearer ',
        `Basic ${Buffer.from(':').toString('base64')}`,
      ]) {
        for (const [path, body] of [
          ['/admin/users', { username: 'nobody-admin', password: PASSWORD }],
          ['/admin/clients', { name: 'nobody-client' }],
        ] as const) {
          const response = await closed.call(path, {
            method: 'POST',
            body,
            headers: authorization === undefined ? {} : { authorization },
          });
          const text = await response.text();
          assert.equal(response.status, 401, `${path} with ${authorization}: ${text}`);
          assert.deepEqual(JSON.parse(text), {
            error: 'invalid_token',
            error_description:
              "the admin API takes only operators' access tokens here: this server has no ADMIN_TOKEN configured for scripts; start it with ADMIN_TOKEN set (16 or more characters), or use the admin command line",
          });
        }
      }
      const startLines = closed
        .log()
        .split('\n')
        .filter((line) => line.includes('scripts cannot use the admin API'));
      assert.equal(startLines.length, 1, closed.log());
      assert.match(startLines[0] ?? '', /"msg":"ADMIN_TOKEN is not set: scripts cannot use the admin API/);
      assert.doesNotMatch(
        service.log(),
        /scripts cannot use the admin API/,
        'a server with ADMIN_TOKEN says nothing of it',
      );
      // Had any of them been let in, this user would exist and log in.
      const login = await closed.login('nobody-admin', PASSWORD);
      assert.equal(login.status, 400);
      assert.equal(((await login.json()) as { error: string }).error, 'invalid_grant');
    } finally {
      await closed.close();
    }
  });

  test('a wrong admin token answers 401 and creates nothing', async () => {
    const userToken = await realToken();
    const wrong = [
      undefined,
      'Bearer wrong-admin-token-0123456789',
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      `Bearer ${ADMIN_TOKEN}0`,
      `Bearer ${ADMIN_TOKEN.toUpperCase()}`,
      `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
      `Token ${ADMIN_TOKEN}`,
    ];
    for (const authorization of wrong) {
      const users = adminCall('/admin/users', { username: 'wrong-token-user', password: PASSWORD }, authorization);
      await expectAdminError(users, 401, 'invalid_token', `users with ${authorization}`);
      const clients = adminCall('/admin/clients', { name: 'wrong-token-client' }, authorization);
      await expectAdminError(clients, 401, 'invalid_token', `clients with ${authorization}`);
    }
    // A user's own access token: a user, not an operator (CONTRACT §21).
    const users = adminCall(
      '/admin/users',
      { username: 'wrong-token-user', password: PASSWORD },
      `Bearer ${userToken}`,
    );
    await expectAdminError(users, 403, 'not_an_operator', 'users with a user token');
    // The username is still free: none of the refused calls created it.
    await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: 'wrong-token-user', password: PASSWORD },
      }),
      201,
    );
  });

  test('POST /admin/users answers 201 with exactly {id, username}, and the user logs in as that id', async () => {
    const body = await expectStatus(
      adminCall('/admin/users', { username: 'admin-made', password: PASSWORD }, `Bearer ${ADMIN_TOKEN}`),
      201,
    );
    assert.deepEqual(Object.keys(body).sort(), ['id', 'username']);
    assert.equal(body.username, 'admin-made');
    assert.equal(typeof body.id, 'string');
    assert.ok(body.id.length > 0);
    assert.equal(decodeJwt(await service.accessToken('admin-made', PASSWORD)).sub, body.id);
  });

  test('an existing username answers 409 username_taken and keeps the first password', async () => {
    await service.createUser('taken-name', PASSWORD);
    const again = adminCall(
      '/admin/users',
      { username: 'taken-name', password: 'another password' },
      `Bearer ${ADMIN_TOKEN}`,
    );
    await expectAdminError(again, 409, 'username_taken', 'second create');
    assert.equal((await expectStatus(service.login('taken-name', 'another password'), 400)).error, 'invalid_grant');
    await service.accessToken('taken-name', PASSWORD);
  });

  test('an invalid username is 400 invalid_request and creates nothing; 150 characters is accepted', async () => {
    const invalid: unknown[] = [
      'with space',
      '',
      ' ',
      'tab\tname',
      'a'.repeat(151),
      'ünïcode',
      'semi;colon',
      123,
      null,
      true,
      ['x'],
      {},
    ];
    for (const username of invalid) {
      await expectAdminError(
        adminCall('/admin/users', { username, password: PASSWORD }, `Bearer ${ADMIN_TOKEN}`),
        400,
        'invalid_request',
        `username ${JSON.stringify(username)}`,
      );
    }
    await expectAdminError(
      adminCall('/admin/users', { password: PASSWORD }, `Bearer ${ADMIN_TOKEN}`),
      400,
      'invalid_request',
      'no username',
    );
    assert.equal((await expectStatus(service.login('a'.repeat(150), PASSWORD), 400)).error, 'invalid_grant');
    const longest = await expectStatus(
      adminCall('/admin/users', { username: 'a'.repeat(150), password: PASSWORD }, `Bearer ${ADMIN_TOKEN}`),
      201,
    );
    assert.equal(longest.username, 'a'.repeat(150));
  });

  test('an invalid password is 400 invalid_request and creates nothing; 8 and 1024 characters are accepted', async () => {
    const invalid: unknown[] = [
      '1234567',
      'p'.repeat(1025),
      '',
      12_345_678,
      null,
      true,
      ['password'],
      { value: PASSWORD },
    ];
    for (const password of invalid) {
      await expectAdminError(
        adminCall('/admin/users', { username: 'password-rules', password }, `Bearer ${ADMIN_TOKEN}`),
        400,
        'invalid_request',
        `password ${JSON.stringify(password).slice(0, 40)}`,
      );
    }
    // No password at all is an account that signs in with passkeys (CONTRACT §19): it gets an invite.
    const passwordless = await expectStatus(
      adminCall('/admin/users', { username: 'passwordless-rules' }, `Bearer ${ADMIN_TOKEN}`),
      201,
    );
    assert.match(passwordless.invite_url, /\/account\/#invite=[A-Za-z0-9_-]{43}$/);
    // 8 characters, but none of the common ones (CONTRACT §20 refuses those: see password-policy.test.ts).
    for (const password of ['k7#pQ2x!', 'p'.repeat(1024)]) {
      const username = `password-rules-${password.length}`;
      await expectStatus(adminCall('/admin/users', { username, password }, `Bearer ${ADMIN_TOKEN}`), 201);
      await service.accessToken(username, password);
    }
    // Still free: none of the refused calls created the user.
    await expectStatus(
      adminCall('/admin/users', { username: 'password-rules', password: PASSWORD }, `Bearer ${ADMIN_TOKEN}`),
      201,
    );
  });
});

describe('OAuth clients', () => {
  const TOKEN_PATH = '/mfa/oauth2/token/';
  const GRANT = { grant_type: 'password', username: 'ac-user', password: PASSWORD };

  async function registerClient(name: string): Promise<{ client_id: string; client_secret: string }> {
    return expectStatus(service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body: { name } }), 201);
  }

  /** RFC 6749 §2.3.1: id and secret form-encoded, then joined and base64-encoded. */
  function basic(clientId: string, clientSecret: string) {
    const pair = `${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`;
    return `Basic ${Buffer.from(pair).toString('base64')}`;
  }

  function tokenRequest(fields: Record<string, string>, { form = false, authorization = '' } = {}) {
    const headers: Record<string, string> = authorization ? { authorization } : {};
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      return service.call(TOKEN_PATH, { method: 'POST', headers, body: new URLSearchParams(fields).toString() });
    }
    return service.call(TOKEN_PATH, { method: 'POST', headers, body: fields });
  }

  async function expectInvalidClient(pending: Promise<Response>, context: string) {
    const response = await pending;
    const text = await response.text();
    assert.equal(response.status, 401, `${context}: ${text}`);
    assert.deepEqual(JSON.parse(text), {
      error: 'invalid_client',
      error_description: JSON.parse(text).error_description,
    });
    assert.equal(typeof JSON.parse(text).error_description, 'string');
    assert.match(response.headers.get('www-authenticate') ?? '', /^Basic\b/, context);
  }

  test('POST /admin/clients answers 201 with client_id, client_secret and the settings (CONTRACT §18); the secret is kept only hashed', async () => {
    const first = await registerClient('first client');
    assert.deepEqual(Object.keys(first).sort(), [
      'allowed_scopes',
      'client_id',
      'client_secret',
      'id_token_signed_response_alg',
      'mfa_challenge',
      'mfa_policy',
      'name',
      'post_logout_redirect_uris',
      'redirect_uris',
      'remember_device_days',
      'token_endpoint_auth_method',
      'web_origins',
    ]);
    assert.equal(typeof first.client_id, 'string');
    assert.ok(first.client_secret.length >= 32, 'the secret is long');
    const second = await registerClient('second client');
    assert.notEqual(second.client_id, first.client_id);
    assert.notEqual(second.client_secret, first.client_secret);

    assert.ok(!(await service.dumpDatabase()).includes(first.client_secret), 'the database holds the secret');
    assert.ok(!service.log().includes(first.client_secret), 'the log holds the secret');
  });

  test('POST /admin/clients refuses a missing, empty or non-string name with 400 invalid_request', async () => {
    for (const body of [{}, { name: '' }, { name: 5 }, { name: null }, { name: ['x'] }, { name: 'n'.repeat(201) }]) {
      const response = await service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body });
      const text = await response.text();
      assert.equal(response.status, 400, `${JSON.stringify(body).slice(0, 40)}: ${text}`);
      assert.equal(JSON.parse(text).error, 'invalid_request');
    }
  });

  test('a registered client authenticates with client_secret_basic and client_secret_post; its tokens name it', async () => {
    const { client_id, client_secret } = await registerClient('confidential');
    const ways: [string, Promise<Response>][] = [
      ['basic, JSON body', tokenRequest(GRANT, { authorization: basic(client_id, client_secret) })],
      ['basic, form body', tokenRequest(GRANT, { form: true, authorization: basic(client_id, client_secret) })],
      ['post, JSON body', tokenRequest({ ...GRANT, client_id, client_secret })],
      ['post, form body', tokenRequest({ ...GRANT, client_id, client_secret }, { form: true })],
    ];
    for (const [way, pending] of ways) {
      const body = await expectStatus(pending, 200).catch((error: Error) => assert.fail(`${way}: ${error.message}`));
      assert.equal(decodeJwt(body.access_token).client_id, client_id, way);
      assert.equal(decodeJwt(body.access_token).sub, userId, way);
    }
  });

  test('a wrong secret or an unknown client answers 401 invalid_client with WWW-Authenticate: Basic', async () => {
    const { client_id, client_secret } = await registerClient('wrong-secret');
    const other = await registerClient('other');
    const unknownId = '00000000-0000-4000-8000-000000000000';
    await expectInvalidClient(tokenRequest(GRANT, { authorization: basic(client_id, `${client_secret}x`) }), 'basic');
    await expectInvalidClient(tokenRequest(GRANT, { authorization: basic(client_id, other.client_secret) }), 'swapped');
    await expectInvalidClient(tokenRequest(GRANT, { authorization: basic(unknownId, client_secret) }), 'unknown id');
    await expectInvalidClient(tokenRequest({ ...GRANT, client_id, client_secret: 'wrong-secret' }), 'post');
    await expectInvalidClient(
      tokenRequest({ ...GRANT, client_id, client_secret: 'wrong-secret' }, { form: true }),
      'post form',
    );
    await expectInvalidClient(tokenRequest({ ...GRANT, client_id: 'public', client_secret }), 'the public id');
  });

  test('a client_id without its secret answers 401 invalid_client', async () => {
    const { client_id } = await registerClient('no-secret');
    await expectInvalidClient(tokenRequest({ ...GRANT, client_id }), 'post, JSON');
    await expectInvalidClient(tokenRequest({ ...GRANT, client_id }, { form: true }), 'post, form');
    await expectInvalidClient(tokenRequest(GRANT, { authorization: basic(client_id, '') }), 'basic, empty secret');
  });

  test('credentials sent both by client_secret_basic and client_secret_post answer 400 invalid_request', async () => {
    const { client_id, client_secret } = await registerClient('both-ways');
    for (const form of [false, true]) {
      const response = await tokenRequest(
        { ...GRANT, client_id, client_secret },
        { form, authorization: basic(client_id, client_secret) },
      );
      const body = await response.json();
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal((body as { error: string }).error, 'invalid_request');
      assert.equal((body as { access_token?: string }).access_token, undefined);
    }
  });

  test('with no client credentials, tokens are issued to the client "public"', async () => {
    for (const form of [false, true]) {
      const body = await expectStatus(tokenRequest(GRANT, { form }), 200);
      assert.equal(decodeJwt(body.access_token).client_id, 'public');
    }
  });
});
