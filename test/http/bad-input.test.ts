import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

// A password nobody would type by accident, so its absence from an answer or the log means something.
const PASSWORD = 'Marker-Password-7f3a91c2';
const USERNAME = 'bad-input-user';
// A second account for requests that put the password in the URL, kept apart from the log check on PASSWORD.
const QUERY_USERNAME = 'bad-input-query-user';
const QUERY_PASSWORD = 'Query-Marker-Password-2b8e64d0';
const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';

let service: Service;
let userToken: string;
let statusBefore: unknown;

before(async () => {
  service = await startService();
  await service.createUser(USERNAME, PASSWORD);
  await service.createUser(QUERY_USERNAME, QUERY_PASSWORD);
  userToken = await service.accessToken(USERNAME, PASSWORD);
  statusBefore = await expectStatus(service.call('/mfa/', { token: userToken }), 200);
});
after(() => service.close());

interface Endpoint {
  method: string;
  path: string;
  /** The Authorization header that gets the request past authentication, if any is needed. */
  authorization: () => string | undefined;
}

const SMS_REQUEST: Endpoint = { method: 'PUT', path: '/mfa/sms/request/', authorization: () => `Bearer ${userToken}` };
const SMS_VERIFY: Endpoint = { method: 'PUT', path: '/mfa/sms/verify/', authorization: () => `Bearer ${userToken}` };
const TOKEN: Endpoint = { method: 'POST', path: '/mfa/oauth2/token/', authorization: () => undefined };
const ADMIN_USERS: Endpoint = { method: 'POST', path: '/admin/users', authorization: () => `Bearer ${ADMIN_TOKEN}` };
const ADMIN_CLIENTS: Endpoint = {
  method: 'POST',
  path: '/admin/clients',
  authorization: () => `Bearer ${ADMIN_TOKEN}`,
};
const ENDPOINTS = [SMS_REQUEST, SMS_VERIFY, TOKEN, ADMIN_USERS, ADMIN_CLIENTS];

/** Sends `body` as is, with `contentType` (none when undefined) and the endpoint's credentials. */
function send(endpoint: Endpoint, body: string | Uint8Array | undefined, contentType: string | undefined) {
  const headers: Record<string, string> = {};
  const authorization = endpoint.authorization();
  if (authorization !== undefined) headers.authorization = authorization;
  if (contentType !== undefined) headers['content-type'] = contentType;
  return fetch(service.url + endpoint.path, { method: endpoint.method, headers, body });
}

function label(endpoint: Endpoint, what: string) {
  return `${endpoint.method} ${endpoint.path} with ${what}`;
}

/**
 * Asserts the answer is `status` with exactly `{error: code, error_description}` as JSON, and that
 * its headers and body repeat neither `secret` nor its first 8 characters. Returns the parsed body.
 */
async function expectError(
  pending: Promise<Response>,
  status: number,
  code: string,
  context: string,
  secret: string = PASSWORD,
): Promise<{ error: string; error_description: string }> {
  const response = await pending;
  const text = await response.text();
  assert.equal(response.status, status, `${context}: ${text}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json\b/, context);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], `${context}: ${text}`);
  assert.equal(body.error, code, `${context}: ${text}`);
  assert.equal(typeof body.error_description, 'string', context);
  assert.ok(body.error_description.length > 0, context);
  for (const piece of [secret, secret.slice(0, 8)]) {
    assert.ok(!text.includes(piece), `${context}: the answer repeats the secret: ${text}`);
    assert.ok(
      ![...response.headers.values()].some((value) => value.includes(piece)),
      `${context}: a header repeats it`,
    );
  }
  return body;
}

/** A body of the right shape for the endpoint, with the marker password wherever a string goes. */
function validLookingBody(endpoint: Endpoint): Record<string, string> {
  switch (endpoint) {
    case SMS_REQUEST:
      return { phone_number: nextPhone(), note: PASSWORD };
    case SMS_VERIFY:
      return { mfa_code: '123456', note: PASSWORD };
    case TOKEN:
      return { grant_type: 'password', username: USERNAME, password: PASSWORD };
    case ADMIN_USERS:
      return { username: 'bad-input-created', password: PASSWORD };
    default:
      return { name: PASSWORD };
  }
}

/**
 * Streams `totalBytes` with Transfer-Encoding: chunked (no Content-Length) over node:http and
 * resolves with the answer, or rejects if the connection fails before an answer arrives.
 */
function streamChunked(
  endpoint: Endpoint,
  contentType: string,
  totalBytes: number,
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': contentType };
    const authorization = endpoint.authorization();
    if (authorization !== undefined) headers.authorization = authorization;
    const request = httpRequest(service.url + endpoint.path, { method: endpoint.method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      response.on('error', reject);
    });
    request.on('error', reject);
    const chunk = Buffer.alloc(16 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < totalBytes) {
        sent += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', pump);
          return;
        }
      }
      request.end();
    };
    pump();
  });
}

describe('malformed bodies', () => {
  // JSON.parse's own messages quote the first 10 characters of what they choke on, hence the bodies that start
  // with the password.
  const MALFORMED = [
    PASSWORD,
    `${PASSWORD}"}`,
    `{"username": "${USERNAME}", "password": "${PASSWORD}"`,
    `{"username": "${USERNAME}", "password": "${PASSWORD}"} trailing`,
    `{'username': '${USERNAME}', 'password': '${PASSWORD}'}`,
    `{"password": "${PASSWORD}", }`,
    `password=${PASSWORD}`,
    `{"password": "${PASSWORD}\u0000`,
  ];

  test('malformed JSON is a 400 invalid_request that does not repeat the body, at every endpoint', async () => {
    for (const endpoint of ENDPOINTS) {
      for (const body of MALFORMED) {
        await expectError(send(endpoint, body, JSON_TYPE), 400, 'invalid_request', label(endpoint, body));
      }
      const notUtf8 = Buffer.concat([
        Buffer.from(`{"password": "${PASSWORD}`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]);
      await expectError(send(endpoint, notUtf8, JSON_TYPE), 400, 'invalid_request', label(endpoint, 'bytes not UTF-8'));
    }
  });

  test('malformed JSON says where it goes wrong, by line and column, without quoting the body', async () => {
    const cases = [
      { body: `password=${PASSWORD}`, where: 'line 1, column 1 (character 1)' },
      { body: `{"password": "${PASSWORD}",\n }`, where: 'line 2, column 2 (character 43)' },
      { body: `{'password': '${PASSWORD}'}`, where: 'line 1, column 2 (character 2)' },
      { body: `{"password": "${PASSWORD}"} trailing`, where: 'line 1, column 42 (character 42)' },
    ];
    for (const { body, where } of cases) {
      const answer = await expectError(send(SMS_REQUEST, body, JSON_TYPE), 400, 'invalid_request', body);
      assert.equal(answer.error_description, `the body is not valid JSON: it goes wrong at ${where}`, body);
    }
    const cut = await expectError(send(TOKEN, `{"password": "${PASSWORD}`, JSON_TYPE), 400, 'invalid_request', 'cut');
    assert.match(cut.error_description, /^the body is not valid JSON: it ends before the JSON does/);
  });

  test('a missing field is named, with the unknown fields sent beside it (often the same, misspelt)', async () => {
    const cases = [
      {
        endpoint: SMS_REQUEST,
        body: { phone: '14155552671' },
        said: 'phone_number: required; got an unknown field "phone"',
      },
      { endpoint: SMS_VERIFY, body: {}, said: 'mfa_code: required' },
      {
        endpoint: SMS_VERIFY,
        body: { code: '123456', otp: '123456' },
        said: 'mfa_code: required; got unknown fields "code", "otp"',
      },
      {
        endpoint: ADMIN_USERS,
        body: { user: 'someone', password: PASSWORD },
        said: 'username: required; got an unknown field "user"',
      },
      { endpoint: TOKEN, body: { username: USERNAME, password: PASSWORD }, said: 'grant_type: required' },
    ];
    for (const { endpoint, body, said } of cases) {
      const json = JSON.stringify(body);
      const answer = await expectError(send(endpoint, json, JSON_TYPE), 400, 'invalid_request', label(endpoint, json));
      assert.equal(answer.error_description, said, label(endpoint, json));
    }
    const form = await expectError(send(TOKEN, `username=${USERNAME}`, FORM_TYPE), 400, 'invalid_request', 'form');
    assert.equal(form.error_description, 'grant_type: required');
  });

  test('an empty body sent as JSON is a 400 invalid_request at every endpoint', async () => {
    for (const endpoint of ENDPOINTS) {
      await expectError(send(endpoint, '', JSON_TYPE), 400, 'invalid_request', label(endpoint, 'an empty string'));
      await expectError(send(endpoint, undefined, JSON_TYPE), 400, 'invalid_request', label(endpoint, 'no body'));
      await expectError(send(endpoint, '   \n', JSON_TYPE), 400, 'invalid_request', label(endpoint, 'whitespace'));
    }
  });

  test('a JSON body that is not an object (array, null, string, number, boolean) is a 400 invalid_request', async () => {
    for (const endpoint of ENDPOINTS) {
      const object = validLookingBody(endpoint);
      for (const body of [[object], [], null, JSON.stringify(object), PASSWORD, 42, true]) {
        await expectError(
          send(endpoint, JSON.stringify(body), JSON_TYPE),
          400,
          'invalid_request',
          label(endpoint, JSON.stringify(body)),
        );
      }
    }
  });

  test('JSON that tries to set __proto__ or constructor.prototype is a 400 invalid_request', async () => {
    for (const endpoint of ENDPOINTS) {
      const fields = JSON.stringify(validLookingBody(endpoint)).slice(1, -1);
      for (const body of [
        `{"__proto__": {"isAdmin": true}, ${fields}}`,
        `{"constructor": {"prototype": {"isAdmin": true}}, ${fields}}`,
      ]) {
        await expectError(send(endpoint, body, JSON_TYPE), 400, 'invalid_request', label(endpoint, body));
      }
    }
  });

  test('deeply nested JSON is a 400 invalid_request, not a crash', async () => {
    const depth = 20_000;
    for (const endpoint of ENDPOINTS) {
      await expectError(
        send(endpoint, '['.repeat(depth) + ']'.repeat(depth), JSON_TYPE),
        400,
        'invalid_request',
        label(endpoint, 'nested arrays'),
      );
      await expectError(
        send(endpoint, `${'{"a":'.repeat(depth / 2)}1${'}'.repeat(depth / 2)}`, JSON_TYPE),
        400,
        'invalid_request',
        label(endpoint, 'nested objects'),
      );
    }
  });
});

describe('content types', () => {
  test('text/plain, application/xml, multipart and a body without a content type are 415 unsupported_media_type', async () => {
    for (const endpoint of ENDPOINTS) {
      const json = JSON.stringify(validLookingBody(endpoint));
      const cases: [string | undefined, string | Uint8Array][] = [
        ['text/plain', json],
        ['text/plain; charset=utf-8', json],
        ['application/xml', `<request><password>${PASSWORD}</password></request>`],
        ['text/xml', `<request><password>${PASSWORD}</password></request>`],
        [
          'multipart/form-data; boundary=x',
          `--x\r\nContent-Disposition: form-data; name="password"\r\n\r\n${PASSWORD}\r\n--x--`,
        ],
        ['application/octet-stream', json],
        [undefined, new TextEncoder().encode(json)],
      ];
      for (const [contentType, body] of cases) {
        const refused = await expectError(
          send(endpoint, body, contentType),
          415,
          'unsupported_media_type',
          label(endpoint, contentType ?? 'no content type'),
        );
        assert.match(refused.error_description, /application\/json/, 'the answer names the type to send');
      }
    }
  });

  test('form bodies are parsed by the token endpoint only; everywhere else they are 415', async () => {
    const wrongPassword = new URLSearchParams({
      grant_type: 'password',
      username: USERNAME,
      password: 'not-it-at-all',
    });
    // invalid_grant comes after the password check, so the form was read.
    await expectError(send(TOKEN, wrongPassword.toString(), FORM_TYPE), 400, 'invalid_grant', 'token endpoint form');
    for (const endpoint of [SMS_REQUEST, SMS_VERIFY, ADMIN_USERS, ADMIN_CLIENTS]) {
      const form = new URLSearchParams(validLookingBody(endpoint)).toString();
      await expectError(send(endpoint, form, FORM_TYPE), 415, 'unsupported_media_type', label(endpoint, 'a form'));
    }
  });
});

describe('wrong types where strings belong', () => {
  const NOT_STRINGS: unknown[] = [123456, 0, -1, 1e308, true, false, null, [], ['x'], {}, { value: 'x' }];

  test('every string field refuses numbers, booleans, null, arrays and objects with 400 invalid_request', async () => {
    const fieldsByEndpoint: [Endpoint, string[]][] = [
      [SMS_REQUEST, ['phone_number']],
      [SMS_VERIFY, ['mfa_code']],
      [TOKEN, ['grant_type', 'username', 'password', 'mfa_code', 'backup_code', 'scope', 'client_id', 'client_secret']],
      [ADMIN_USERS, ['username', 'password']],
      [ADMIN_CLIENTS, ['name']],
    ];
    for (const [endpoint, fields] of fieldsByEndpoint) {
      for (const field of fields) {
        for (const value of NOT_STRINGS) {
          const body = { ...validLookingBody(endpoint), [field]: value };
          await expectError(
            send(endpoint, JSON.stringify(body), JSON_TYPE),
            400,
            'invalid_request',
            label(endpoint, `${field}: ${JSON.stringify(value)}`),
          );
        }
      }
    }
  });

  test('the right password next to a wrongly typed field gets no tokens', async () => {
    // Were the bad field coerced or ignored, these would be 200 with tokens.
    for (const extra of [{ scope: 5 }, { mfa_code: 123456 }, { client_id: ['public'] }, { grant_type: ['password'] }]) {
      const body = { grant_type: 'password', username: USERNAME, password: PASSWORD, ...extra };
      await expectError(
        send(TOKEN, JSON.stringify(body), JSON_TYPE),
        400,
        'invalid_request',
        label(TOKEN, JSON.stringify(extra)),
      );
    }
    for (const password of [[PASSWORD], { value: PASSWORD }]) {
      const body = { grant_type: 'password', username: USERNAME, password };
      await expectError(send(TOKEN, JSON.stringify(body), JSON_TYPE), 400, 'invalid_request', 'password not a string');
    }
  });

  test('duplicate form parameters on the token endpoint are a 400 invalid_request, even when both copies agree', async () => {
    const base = `grant_type=password&username=${USERNAME}&password=${PASSWORD}`;
    for (const body of [
      `${base}&password=${PASSWORD}`,
      `${base}&password=something-else`,
      `${base}&username=${USERNAME}`,
      `${base}&grant_type=password`,
      `${base}&scope=a&scope=b`,
      `${base}&client_id=public&client_id=public`,
    ]) {
      await expectError(send(TOKEN, body, FORM_TYPE), 400, 'invalid_request', label(TOKEN, body));
    }
  });

  test('credentials in the query string instead of the body get no tokens, and stay out of the log', async () => {
    const query = new URLSearchParams({ grant_type: 'password', username: QUERY_USERNAME, password: QUERY_PASSWORD });
    await expectError(
      fetch(`${service.url}${TOKEN.path}?${query}`, { method: 'POST' }),
      400,
      'invalid_request',
      'query string',
      QUERY_PASSWORD,
    );
    assert.ok(!service.log().includes(QUERY_PASSWORD), 'the log holds a password sent in the URL');
  });
});

describe('sizes', () => {
  test('a password over 1024 characters is refused with 400 before it is hashed', async () => {
    for (const length of [1025, 60_000]) {
      const long = 'p'.repeat(length);
      const started = performance.now();
      await expectError(service.login(USERNAME, long), 400, 'invalid_request', `token JSON, ${length}`, long);
      await expectError(
        send(
          TOKEN,
          new URLSearchParams({ grant_type: 'password', username: USERNAME, password: long }).toString(),
          FORM_TYPE,
        ),
        400,
        'invalid_request',
        `token form, ${length}`,
        long,
      );
      await expectError(
        service.call('/admin/users', {
          method: 'POST',
          token: ADMIN_TOKEN,
          body: { username: `long-password-${length}`, password: long },
        }),
        400,
        'invalid_request',
        `admin users, ${length}`,
        long,
      );
      assert.ok(performance.now() - started < 1000, `three refusals of a ${length}-character password took over 1 s`);
    }
  });

  test('a 100 000-character password makes the body pass 64 KiB: 413 payload_too_large, fast', async () => {
    const long = 'p'.repeat(100_000);
    const started = performance.now();
    await expectError(service.login(USERNAME, long), 413, 'payload_too_large', 'token endpoint', long);
    await expectError(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: 'long-pw', password: long },
      }),
      413,
      'payload_too_large',
      'admin users',
      long,
    );
    assert.ok(performance.now() - started < 1000, 'the refusals took over 1 s');
  });

  test('a body of exactly 64 KiB is read, one byte more is 413 payload_too_large', async () => {
    const bodyOf = (bytes: number) => {
      const fields = { grant_type: 'password', username: USERNAME, password: 'a wrong password', pad: '' };
      return JSON.stringify({ ...fields, pad: 'x'.repeat(bytes - JSON.stringify(fields).length) });
    };
    assert.equal(Buffer.byteLength(bodyOf(65_536)), 65_536);
    // invalid_grant comes from the password check, so the body was read.
    await expectError(send(TOKEN, bodyOf(65_536), JSON_TYPE), 400, 'invalid_grant', '64 KiB');
    await expectError(send(TOKEN, bodyOf(65_537), JSON_TYPE), 413, 'payload_too_large', '64 KiB + 1');
  });

  test('a 3 MB body with a Content-Length gets a 413 payload_too_large answer at every endpoint', async () => {
    for (const endpoint of ENDPOINTS) {
      const huge = JSON.stringify({ ...validLookingBody(endpoint), pad: 'x'.repeat(3_000_000) });
      await expectError(send(endpoint, huge, JSON_TYPE), 413, 'payload_too_large', label(endpoint, '3 MB of JSON'));
    }
    const form = `grant_type=password&username=${USERNAME}&password=${PASSWORD}&pad=${'x'.repeat(3_000_000)}`;
    await expectError(send(TOKEN, form, FORM_TYPE), 413, 'payload_too_large', label(TOKEN, '3 MB of form'));
  });

  test('a 3 MB body streamed without Content-Length (chunked) gets a 413 answer, not a reset connection', async () => {
    const cases: [Endpoint, string][] = [
      ...ENDPOINTS.map((endpoint): [Endpoint, string] => [endpoint, JSON_TYPE]),
      [TOKEN, FORM_TYPE],
    ];
    for (const [endpoint, contentType] of cases) {
      const answer = await streamChunked(endpoint, contentType, 3_000_000);
      const context = label(endpoint, `3 MB chunked ${contentType}`);
      assert.equal(answer.status, 413, `${context}: ${answer.text}`);
      assert.match(String(answer.headers['content-type']), /^application\/json\b/, context);
      const body = JSON.parse(answer.text);
      assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], context);
      assert.equal(body.error, 'payload_too_large', context);
      assert.equal(typeof body.error_description, 'string', context);
    }
  });
});

describe('routes and methods', () => {
  test('unknown routes are 404 not_found with a JSON error body', async () => {
    const unknown: [string, string][] = [
      ['GET', '/'],
      ['GET', '/nope'],
      ['GET', '/mfa/nope/'],
      ['POST', '/mfa/sms/'],
      ['PUT', '/mfa/sms/request/extra/'],
      ['POST', '/admin/'],
      ['POST', '/admin/users/1/delete'],
      ['GET', '/admin/webhooks/some-id/nope'],
      ['DELETE', '/mfa/factors/some-id/extra/'],
      ['GET', '/mfa/oauth2/'],
      ['GET', '/.env'],
      ['GET', '/%2e%2e/%2e%2e/etc/passwd'],
      ['GET', `/mfa/${'x'.repeat(5000)}`],
    ];
    for (const [method, path] of unknown) {
      await expectError(
        fetch(service.url + path, { method, headers: { authorization: `Bearer ${userToken}` } }),
        404,
        'not_found',
        `${method} ${path.slice(0, 40)}`,
      );
    }
  });

  test('a wrong method on a known path is 405 method_not_allowed with an Allow header naming the right ones', async () => {
    const cases: [string, string, string[]][] = [
      ['POST', '/mfa/', ['GET', 'DELETE']],
      ['PUT', '/mfa', ['GET', 'DELETE']],
      ['PATCH', '/mfa/', ['GET', 'DELETE']],
      ['GET', '/mfa/sms/request/', ['PUT']],
      ['POST', '/mfa/sms/request/', ['PUT']],
      ['DELETE', '/mfa/sms/verify/', ['PUT']],
      ['POST', '/mfa/sms/verify', ['PUT']],
      ['GET', '/mfa/oauth2/token/', ['POST']],
      ['PUT', '/mfa/oauth2/token/', ['POST']],
      ['GET', '/mfa/oauth2/token/?grant_type=password', ['POST']],
      ['PATCH', '/admin/users', ['GET', 'POST']],
      ['DELETE', '/admin/users', ['GET', 'POST']],
      ['PUT', '/admin/clients/', ['GET', 'POST']],
      // Routes with a parameter: the router matches the path, not its text.
      ['GET', '/admin/webhooks/some-id', ['DELETE']],
      ['POST', '/admin/webhooks/some-id/deliveries', ['GET']],
      ['PUT', '/admin/users/some-id', ['GET', 'DELETE']],
      ['PUT', '/admin/clients/some-id', ['GET', 'PATCH']],
      ['GET', '/mfa/factors/some-id/', ['PATCH', 'DELETE']],
      ['POST', '/mfa/factors/some-id', ['PATCH', 'DELETE']],
    ];
    for (const [method, path, allowed] of cases) {
      const context = `${method} ${path}`;
      const hasBody = method !== 'GET' && method !== 'DELETE';
      const response = await fetch(service.url + path, {
        method,
        headers: { authorization: `Bearer ${userToken}`, ...(hasBody ? { 'content-type': JSON_TYPE } : {}) },
        body: hasBody ? '{}' : undefined,
      });
      const allow = (response.headers.get('allow') ?? '').split(',').map((name) => name.trim());
      for (const name of allowed) assert.ok(allow.includes(name), `${context}: Allow is "${allow}"`);
      assert.ok(!allow.includes(method), `${context}: Allow "${allow}" names the refused method`);
      await expectError(Promise.resolve(response), 405, 'method_not_allowed', context);
    }
  });
});

describe('HTTP framing', () => {
  /** Writes `head` (request line and headers) on a fresh connection; the status and body that come back. */
  function sendHead(head: string[]): Promise<{ status: number; body: string }> {
    const { hostname, port } = new URL(service.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let raw = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        raw += chunk;
      });
      socket.on('error', reject);
      socket.on('close', () => {
        const [top = '', body = ''] = raw.split('\r\n\r\n');
        resolve({ status: Number(top.split(' ')[1]), body });
      });
      socket.end(`${[...head, 'Connection: close', '', ''].join('\r\n')}`);
    });
  }

  test('an HTTP/1.1 request without Host is 400 with an error body', async () => {
    const { status, body } = await sendHead(['GET /healthz HTTP/1.1']);
    assert.equal(status, 400, body);
    assert.equal(JSON.parse(body).error, 'invalid_request');
  });

  test('an Expect other than 100-continue is 417 with an error body', async () => {
    const { status, body } = await sendHead(['GET /healthz HTTP/1.1', 'Host: x', 'Expect: tea']);
    assert.equal(status, 417, body);
    assert.equal(JSON.parse(body).error, 'invalid_request');
  });

  test('HTTP/1.0 without Host is still served', async () => {
    const { status, body } = await sendHead(['GET /healthz HTTP/1.0']);
    assert.equal(status, 200, body);
  });
});

describe('after all of the above', () => {
  test('nothing changed: same MFA status, no SMS sent, no error logged, and the user still logs in', async () => {
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: userToken }), 200), statusBefore);
    assert.deepEqual(service.twilio.messages, []);
    assert.equal(service.twilio.requestCount, 0, 'nothing reached the SMS provider');

    const log = service.log();
    const errorLines = log.split('\n').filter((line) => /"level":(50|60)\b/.test(line));
    assert.deepEqual(errorLines, [], 'client input caused an error-level log line');
    assert.ok(!log.includes(PASSWORD), 'the log holds the password');

    const tokens = await expectStatus(service.login(USERNAME, PASSWORD), 200);
    assert.equal(typeof tokens.access_token, 'string');
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200), statusBefore);
    // The admin API still works, and none of the refused bodies created this user.
    const created = await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: 'bad-input-created', password: PASSWORD },
      }),
      201,
    );
    assert.equal(created.username, 'bad-input-created');
  });

  test('an access token in a query string, or a phone number in an unknown path, is not written to the log', async () => {
    const token = await service.accessToken(QUERY_USERNAME, QUERY_PASSWORD);
    await fetch(`${service.url}/mfa/?access_token=${token}`).then((response) => response.arrayBuffer());
    const phone = nextPhone();
    await expectError(fetch(`${service.url}/mfa/sms/${phone}/`), 404, 'not_found', 'phone number in a path');
    const log = service.log();
    assert.ok(!log.includes(phone), 'the log holds a phone number sent in the URL');
    assert.ok(!log.includes(QUERY_PASSWORD), 'the log holds a password sent in the URL');
    assert.ok(!log.includes(token), 'the log holds an access token sent in the URL');
  });
});
