import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

// Property-based tests (issue 5): thousands of generated bodies, headers and tokens at every endpoint.
// Whatever arrives, the service answers below 500, every 4xx is the contract's `{error, error_description}`
// (CONTRACT.md §8), the server stays up, and a refused request changes nothing.
//
// The cases are the same on every run (fixed seed). PROPERTY_SEED=<n> explores others; a failure prints the
// seed and path that replay it, and the shrunk counterexample.
const SEED = Number(process.env.PROPERTY_SEED ?? 20_261_123);

/** Cases per property, tuned to keep this file under a minute on two busy cores with PostgreSQL. */
const RUNS = { bodies: 3000, authorization: 1100, clientCredentials: 300, forms: 1000, rawHttp: 200 };

const FORM_TYPE = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

type Guard = 'access_token' | 'admin' | 'client' | 'none';
interface Endpoint {
  method: string;
  /** The route as src/http/routes declares it. */
  route: string;
  guard: Guard;
  body: 'none' | 'json' | 'oauth';
  /** The body fields the route's schema names. */
  fields: readonly string[];
  /** Whether a generated request may get a 2xx here: reads, and the RFC 7009/7662 answers to unknown tokens. */
  mayAnswer2xx: boolean;
}

const TOKEN_FIELDS = [
  'grant_type',
  'username',
  'password',
  'mfa_code',
  'backup_code',
  'webauthn_response',
  'mfa_type',
  'acr_values',
  'max_age',
  'mfa_token',
  'otp',
  'recovery_code',
  'scope',
  'refresh_token',
  'client_id',
  'client_secret',
];
const TOKEN_BODY_FIELDS = ['token', 'token_type_hint', 'client_id', 'client_secret'];

function endpoint(method: string, route: string, guard: Guard, more: Partial<Endpoint> = {}): Endpoint {
  return { method, route, guard, body: 'none', fields: [], mayAnswer2xx: method === 'GET', ...more };
}

// Every route of src/http/routes/*.ts, and the OpenAPI document of app.ts.
const GET_MFA = endpoint('GET', '/mfa/', 'access_token');
const DELETE_MFA = endpoint('DELETE', '/mfa/', 'access_token');
const SMS_REQUEST = endpoint('PUT', '/mfa/sms/request/', 'access_token', { body: 'json', fields: ['phone_number'] });
const SMS_VERIFY = endpoint('PUT', '/mfa/sms/verify/', 'access_token', { body: 'json', fields: ['mfa_code'] });
const LIST_FACTORS = endpoint('GET', '/mfa/factors/', 'access_token');
const UPDATE_FACTOR = endpoint('PATCH', '/mfa/factors/:id/', 'access_token', {
  body: 'json',
  fields: ['name', 'is_default'],
});
const DELETE_FACTOR = endpoint('DELETE', '/mfa/factors/:id/', 'access_token');
const TOTP_REQUEST = endpoint('PUT', '/mfa/totp/request/', 'access_token', { body: 'json', fields: ['name'] });
const TOTP_VERIFY = endpoint('PUT', '/mfa/totp/verify/', 'access_token', { body: 'json', fields: ['mfa_code'] });
const WEBAUTHN_REQUEST = endpoint('PUT', '/mfa/webauthn/request/', 'access_token', { body: 'json', fields: ['name'] });
const WEBAUTHN_VERIFY = endpoint('PUT', '/mfa/webauthn/verify/', 'access_token', {
  body: 'json',
  fields: ['credential', 'name'],
});
const NEW_BACKUP_CODES = endpoint('POST', '/mfa/recovery/', 'access_token');
const COUNT_BACKUP_CODES = endpoint('GET', '/mfa/recovery/', 'access_token');
const TOKEN = endpoint('POST', '/mfa/oauth2/token/', 'client', { body: 'oauth', fields: TOKEN_FIELDS });
const REVOKE = endpoint('POST', '/mfa/oauth2/revoke/', 'client', {
  body: 'oauth',
  fields: TOKEN_BODY_FIELDS,
  mayAnswer2xx: true,
});
const INTROSPECT = endpoint('POST', '/mfa/oauth2/introspect/', 'client', {
  body: 'oauth',
  fields: TOKEN_BODY_FIELDS,
  mayAnswer2xx: true,
});
const ADMIN_USERS = endpoint('POST', '/admin/users', 'admin', {
  body: 'json',
  fields: ['username', 'password', 'email'],
});
const ADMIN_CLIENTS = endpoint('POST', '/admin/clients', 'admin', { body: 'json', fields: ['name'] });
const ADMIN_SIGNING_KEYS = endpoint('POST', '/admin/signing-keys', 'admin');
const ADMIN_EVENTS = endpoint('GET', '/admin/users/:id/events', 'admin');
const ADMIN_FIND_USER = endpoint('GET', '/admin/users', 'admin');
const ADMIN_DELETE_USER = endpoint('DELETE', '/admin/users/:id', 'admin');
const ADMIN_RESET_MFA = endpoint('DELETE', '/admin/users/:id/mfa', 'admin');
const ADMIN_END_SESSIONS = endpoint('DELETE', '/admin/users/:id/sessions', 'admin');
const ADMIN_REDELIVER = endpoint('POST', '/admin/webhooks/:id/deliveries/:event_id/redeliver', 'admin');
const ADMIN_UNLOCK_USER = endpoint('POST', '/admin/users/:id/unlock', 'admin');
const ADMIN_RESUME_COUNTRY = endpoint('POST', '/admin/sms/countries/:country/resume', 'admin');
const ADMIN_SHOW_CLIENT = endpoint('GET', '/admin/clients/:id', 'admin');
const ADMIN_UPDATE_CLIENT = endpoint('PATCH', '/admin/clients/:id', 'admin', {
  body: 'json',
  fields: ['mfa_challenge'],
});
const ADMIN_CREATE_WEBHOOK = endpoint('POST', '/admin/webhooks', 'admin', { body: 'json', fields: ['url', 'events'] });
const ADMIN_LIST_WEBHOOKS = endpoint('GET', '/admin/webhooks', 'admin');
// Generated ids name no endpoint: 404 whoever asks.
const ADMIN_DELETE_WEBHOOK = endpoint('DELETE', '/admin/webhooks/:id', 'admin');
const ADMIN_WEBHOOK_DELIVERIES = endpoint('GET', '/admin/webhooks/:id/deliveries', 'admin');
const ADMIN_LIST_CLIENTS = endpoint('GET', '/admin/clients', 'admin');
// Generated ids name no user: 404.
const ADMIN_INVITE = endpoint('POST', '/admin/users/:id/invite', 'admin');
// A generated password would replace a fixture user's: only refused credentials are sent.
const ADMIN_SET_PASSWORD = endpoint('POST', '/admin/users/:id/password', 'admin', {
  body: 'json',
  fields: ['password'],
});
const PASSWORD_CHANGE = endpoint('PUT', '/mfa/password/', 'access_token', {
  body: 'json',
  fields: ['current_password', 'new_password'],
});
const PASSWORD_REMOVE = endpoint('DELETE', '/mfa/password/', 'access_token');
const PASSWORD_STATE = endpoint('GET', '/mfa/password/', 'access_token');
const EMAIL_STATE = endpoint('GET', '/mfa/email/', 'access_token');
const EMAIL_REQUEST = endpoint('PUT', '/mfa/email/request/', 'access_token', { body: 'json', fields: ['email'] });
const EMAIL_VERIFY = endpoint('PUT', '/mfa/email/verify/', 'access_token', { body: 'json', fields: ['mfa_code'] });
const LANGUAGE_STATE = endpoint('GET', '/mfa/language/', 'access_token');
// {"language": null} is a generated body that passes: it stores what every fixture user has, so
// nothing changes (the properties check that), and answers 200.
const LANGUAGE_CHANGE = endpoint('PUT', '/mfa/language/', 'access_token', {
  body: 'json',
  fields: ['language'],
  mayAnswer2xx: true,
});
// Recovery (CONTRACT §20): asked and completed with a password, which no generated body has.
const RECOVERY_ASK = endpoint('POST', '/mfa/recovery-request/', 'none', {
  body: 'json',
  fields: ['username', 'password'],
});
const RECOVERY_COMPLETE = endpoint('POST', '/mfa/recovery-request/complete/', 'none', {
  body: 'json',
  fields: ['username', 'password'],
});
const RECOVERY_STATE = endpoint('GET', '/mfa/recovery-request/', 'access_token');
// No fixture user has a request waiting: a cancel changes nothing, and answers 204.
const RECOVERY_CANCEL = endpoint('DELETE', '/mfa/recovery-request/', 'access_token', { mayAnswer2xx: true });
// Forgot password: 202 {} for any name (no fixture user has an address); a generated token names no link.
const RESET_REQUEST = endpoint('POST', '/mfa/password/reset/', 'none', {
  body: 'json',
  fields: ['username', 'email'],
  mayAnswer2xx: true,
});
const RESET_PASSWORD = endpoint('PUT', '/mfa/password/reset/', 'none', {
  body: 'json',
  fields: ['token', 'new_password'],
});
// Email codes as a factor are off in this service: 400 whatever the body.
const EMAIL_FACTOR_OFFER = endpoint('GET', '/mfa/email-factor/', 'access_token');
const EMAIL_FACTOR_REQUEST = endpoint('PUT', '/mfa/email-factor/request/', 'access_token');
const EMAIL_FACTOR_VERIFY = endpoint('PUT', '/mfa/email-factor/verify/', 'access_token', {
  body: 'json',
  fields: ['mfa_code'],
});
const DEVICES = endpoint('GET', '/mfa/devices/', 'access_token');
// Generated ids name no remembered device: 404.
const FORGET_DEVICE = endpoint('DELETE', '/mfa/devices/:id/', 'access_token');
const ADMIN_DELETE_CLIENT = endpoint('DELETE', '/admin/clients/:id', 'admin');
const ADMIN_ROTATE_CLIENT_SECRET = endpoint('POST', '/admin/clients/:id/secret', 'admin');
// The hosted sign-in's API: bound to a browser's cookie, which no generated request has (410).
const SIGN_IN = '/mfa/oauth2/sign-in/:id';
const signInCall = (method: string, path: string, fields: string[] = []) =>
  endpoint(method, `${SIGN_IN}${path}`, 'none', {
    body: fields.length > 0 ? 'json' : 'none',
    fields,
    mayAnswer2xx: false,
  });
const SIGN_IN_ENDPOINTS = [
  signInCall('GET', '/'),
  signInCall('POST', '/password', ['username', 'password']),
  signInCall('POST', '/second-factor', ['mfa_type', 'mfa_code', 'backup_code', 'webauthn_response']),
  signInCall('POST', '/cancel'),
  signInCall('POST', '/passkey', ['webauthn_response']),
  signInCall('PUT', '/totp/request/', ['name']),
  signInCall('PUT', '/totp/verify/', ['mfa_code']),
  signInCall('PUT', '/webauthn/request/', ['name']),
  signInCall('PUT', '/webauthn/verify/', ['credential', 'name']),
  signInCall('PUT', '/sms/request/', ['phone_number']),
  signInCall('PUT', '/sms/verify/', ['mfa_code']),
];
/** Admin calls that change what they name whatever the body: only refused credentials are sent to them. */
const ADMIN_WITHOUT_SAFE_BODY = new Set([
  ADMIN_SIGNING_KEYS,
  ADMIN_DELETE_USER,
  ADMIN_RESET_MFA,
  ADMIN_END_SESSIONS,
  ADMIN_UNLOCK_USER,
  ADMIN_REDELIVER,
  ADMIN_RESUME_COUNTRY,
  ADMIN_INVITE,
  ADMIN_SET_PASSWORD,
]);
const ENDPOINTS: readonly Endpoint[] = [
  GET_MFA,
  DELETE_MFA,
  SMS_REQUEST,
  SMS_VERIFY,
  LIST_FACTORS,
  UPDATE_FACTOR,
  DELETE_FACTOR,
  TOTP_REQUEST,
  TOTP_VERIFY,
  WEBAUTHN_REQUEST,
  WEBAUTHN_VERIFY,
  NEW_BACKUP_CODES,
  COUNT_BACKUP_CODES,
  TOKEN,
  REVOKE,
  INTROSPECT,
  endpoint('GET', '/.well-known/oauth-authorization-server', 'none'),
  endpoint('GET', '/.well-known/openid-configuration', 'none'),
  endpoint('GET', '/.well-known/jwks.json', 'none'),
  endpoint('GET', '/mfa/service/', 'none'),
  // Fixture tokens were granted no scope: 403 insufficient_scope.
  endpoint('GET', '/mfa/oauth2/userinfo/', 'access_token', { mayAnswer2xx: false }),
  endpoint('POST', '/mfa/oauth2/userinfo/', 'access_token'),
  ...SIGN_IN_ENDPOINTS,
  // Anyone may ask for passkey sign-in options: they are signed, not stored.
  endpoint('POST', '/mfa/webauthn/sign-in/', 'none', { mayAnswer2xx: true }),
  // Generated invites name none: 410.
  endpoint('POST', '/mfa/invite/passkey/options/', 'none', { body: 'json', fields: ['invite', 'name'] }),
  endpoint('POST', '/mfa/invite/passkey/', 'none', { body: 'json', fields: ['invite', 'credential', 'name'] }),
  PASSWORD_CHANGE,
  PASSWORD_REMOVE,
  PASSWORD_STATE,
  EMAIL_STATE,
  EMAIL_REQUEST,
  EMAIL_VERIFY,
  LANGUAGE_STATE,
  LANGUAGE_CHANGE,
  RECOVERY_ASK,
  RECOVERY_COMPLETE,
  RECOVERY_STATE,
  RECOVERY_CANCEL,
  RESET_REQUEST,
  RESET_PASSWORD,
  EMAIL_FACTOR_OFFER,
  EMAIL_FACTOR_REQUEST,
  EMAIL_FACTOR_VERIFY,
  DEVICES,
  FORGET_DEVICE,
  endpoint('GET', '/admin/users/search', 'admin'),
  endpoint('GET', '/admin/stats/sms', 'admin'),
  endpoint('GET', '/admin/stats/sign-ins', 'admin'),
  endpoint('GET', '/admin/users/:id', 'admin'),
  endpoint('GET', '/admin/sms/countries', 'admin'),
  endpoint('GET', '/admin/signing-keys', 'admin'),
  ADMIN_END_SESSIONS,
  ADMIN_UNLOCK_USER,
  ADMIN_REDELIVER,
  ADMIN_RESUME_COUNTRY,
  ADMIN_INVITE,
  ADMIN_SET_PASSWORD,
  ADMIN_USERS,
  ADMIN_CLIENTS,
  ADMIN_SIGNING_KEYS,
  ADMIN_EVENTS,
  ADMIN_FIND_USER,
  ADMIN_DELETE_USER,
  ADMIN_RESET_MFA,
  ADMIN_SHOW_CLIENT,
  ADMIN_UPDATE_CLIENT,
  ADMIN_CREATE_WEBHOOK,
  ADMIN_LIST_WEBHOOKS,
  ADMIN_DELETE_WEBHOOK,
  ADMIN_WEBHOOK_DELIVERIES,
  ADMIN_LIST_CLIENTS,
  ADMIN_DELETE_CLIENT,
  ADMIN_ROTATE_CLIENT_SECRET,
  endpoint('GET', '/healthz', 'none'),
  endpoint('GET', '/readyz', 'none'),
  endpoint('GET', '/metrics', 'none'),
  endpoint('GET', '/openapi.json', 'none'),
];
const GUARDED_BY_ACCESS_TOKEN = ENDPOINTS.filter((candidate) => candidate.guard === 'access_token');
const GUARDED_BY_ADMIN_TOKEN = ENDPOINTS.filter((candidate) => candidate.guard === 'admin');
const OAUTH_ENDPOINTS = [TOKEN, REVOKE, INTROSPECT];

/** Requests sent by the properties, per endpoint route (and 'raw' for the socket-level ones). */
const sentTo = new Map<string, number>();
function countSent(route: string) {
  sentTo.set(route, (sentTo.get(route) ?? 0) + 1);
}

const PASSWORDS = {
  plain: `plain-${randomBytes(9).toString('hex')}`,
  mfa: `mfa-${randomBytes(9).toString('hex')}`,
  pending: `pending-${randomBytes(9).toString('hex')}`,
};

/** The real credentials of the fixture, made in `before`: the bases of every mutated token. */
interface Fixture {
  userIds: string[];
  /** Password-only token of a user who turned MFA on afterwards: refused by every call that changes MFA. */
  weakMfaToken: string;
  /** Token of a login with the SMS code: would disable MFA or replace the backup codes if it got through. */
  strongToken: string;
  /** Token of a user without MFA: would enrol a phone if it got through. */
  plainToken: string;
  /** Token of a user with an enrolment code pending: would burn an attempt at it if it got through. */
  pendingToken: string;
  refreshTokens: string[];
  clientId: string;
  clientSecret: string;
  /** The published Ed25519 key, as the HMAC secret of an algorithm-confusion forgery. */
  publicJwk: string;
}

let service: Service;
let fixture: Fixture;
let baseline: State;

before(async () => {
  service = await startService();
  const client = await expectStatus(
    service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body: { name: 'properties app' } }),
    201,
  );
  const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;

  const plainId = await service.createUser('prop-plain', PASSWORDS.plain);
  const plain = await expectStatus(service.login('prop-plain', PASSWORDS.plain), 200);
  const viaClient = await expectStatus(
    service.call('/mfa/oauth2/token/', {
      method: 'POST',
      headers: { authorization: basic },
      body: { grant_type: 'password', username: 'prop-plain', password: PASSWORDS.plain },
    }),
    200,
  );

  // A user with SMS MFA and backup codes; the password-only token from before enrolment stays weak.
  const mfaId = await service.createUser('prop-mfa', PASSWORDS.mfa);
  const weakMfaToken = await service.accessToken('prop-mfa', PASSWORDS.mfa);
  const mfaPhone = nextPhone();
  await expectStatus(
    service.call('/mfa/sms/request/', { method: 'PUT', token: weakMfaToken, body: { phone_number: mfaPhone } }),
    200,
  );
  const enrolCode = service.twilio.lastCodeFor(`+${mfaPhone}`);
  await expectStatus(
    service.call('/mfa/sms/verify/', { method: 'PUT', token: weakMfaToken, body: { mfa_code: enrolCode } }),
    200,
  );
  assert.equal((await expectStatus(service.login('prop-mfa', PASSWORDS.mfa), 200)).mfa_required, true);
  const strong = await expectStatus(
    service.login('prop-mfa', PASSWORDS.mfa, { mfa_code: service.twilio.lastCodeFor(`+${mfaPhone}`) }),
    200,
  );
  await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token: strong.access_token }), 200);

  // A user halfway through enrolment: an unused code waits in the database.
  const pendingId = await service.createUser('prop-pending', PASSWORDS.pending);
  const pendingToken = await service.accessToken('prop-pending', PASSWORDS.pending);
  await expectStatus(
    service.call('/mfa/sms/request/', { method: 'PUT', token: pendingToken, body: { phone_number: nextPhone() } }),
    200,
  );

  const jwks = await expectStatus(service.call('/.well-known/jwks.json'), 200);
  fixture = {
    userIds: [plainId, mfaId, pendingId],
    weakMfaToken,
    strongToken: strong.access_token,
    plainToken: plain.access_token,
    pendingToken,
    refreshTokens: [plain.refresh_token, viaClient.refresh_token, strong.refresh_token],
    clientId: client.client_id,
    clientSecret: client.client_secret,
    publicJwk: JSON.stringify(jwks.keys[0]),
  };
  baseline = await captureState();
});

after(async () => {
  await service.close();
});

// ---------------------------------------------------------------------------------------------------------
// Sending and checking

interface Attempt {
  method: string;
  /** Path and query, already percent-encoded where needed. */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * Sends the request as generated, on a connection of its own (node:http lets a GET carry a body and keeps
 * odd header values). A connection per request: the server may close one after refusing a body, and a
 * reused one would then fail the next case for nothing.
 */
function send(attempt: Attempt, route: string): Promise<Answer> {
  countSent(route);
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { hostname, port, method: attempt.method, path: attempt.path, headers: attempt.headers, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    // Framed by Content-Length whatever the method: unframed bytes after a GET would be read as a next request.
    if (attempt.body !== undefined) request.setHeader('content-length', Buffer.byteLength(attempt.body));
    request.end(attempt.body);
  });
}

function describeAttempt(attempt: Attempt): string {
  const body = attempt.body === undefined ? '' : String(Buffer.from(attempt.body)).slice(0, 300);
  return `${attempt.method} ${attempt.path.slice(0, 200)} ${JSON.stringify(attempt.headers).slice(0, 400)} ${body}`;
}

/** Below 500; a 4xx is exactly `{error, error_description}` as JSON, with the headers its status needs. */
function assertContractAnswer(answer: Answer, context: string) {
  assert.ok(answer.status < 500, `${context}\n=> ${answer.status} ${answer.text.slice(0, 300)}`);
  if (answer.status < 400) return;
  assert.match(String(answer.headers['content-type']), /^application\/json\b/, `${context}\n=> ${answer.status}`);
  let body: unknown;
  assert.doesNotThrow(
    () => {
      body = JSON.parse(answer.text);
    },
    `${context}\n=> not JSON: ${answer.text.slice(0, 300)}`,
  );
  const error = body as Record<string, unknown>;
  assert.deepEqual(Object.keys(error).sort(), ['error', 'error_description'], `${context}\n=> ${answer.text}`);
  assert.ok(typeof error.error === 'string' && /^[a-z_]+$/.test(error.error), `${context}\n=> ${answer.text}`);
  assert.ok(typeof error.error_description === 'string' && error.error_description.length > 0, context);
  if (answer.status === 401)
    assert.ok(answer.headers['www-authenticate'], `${context}\n=> 401 without WWW-Authenticate`);
  if (answer.status === 405) assert.ok(answer.headers.allow, `${context}\n=> 405 without Allow`);
  if (answer.status === 429) assert.ok(answer.headers['retry-after'], `${context}\n=> 429 without Retry-After`);
}

/** A 401 `error` with a WWW-Authenticate of `scheme`: the shape of every refused credential. */
function assertRefused(answer: Answer, error: string, scheme: string, context: string) {
  assertContractAnswer(answer, context);
  assert.equal(answer.status, 401, `${context}\n=> ${answer.status} ${answer.text}`);
  assert.equal(JSON.parse(answer.text).error, error, `${context}\n=> ${answer.text}`);
  assert.match(String(answer.headers['www-authenticate']), new RegExp(`^${scheme} `), context);
}

/** Every row of every table, each table's rows sorted (row order is the database's business). */
interface State {
  /** Every row of every table, each table's rows sorted (row order is the database's business). */
  tables: Map<string, string[]>;
  smsRequests: number;
}

async function captureState(): Promise<State> {
  const tables = new Map<string, string[]>();
  for (const line of (await service.dumpDatabase()).split('\n')) {
    const colon = line.indexOf(': ');
    const rows = JSON.parse(line.slice(colon + 2)) as unknown[];
    tables.set(line.slice(0, colon), rows.map((row) => JSON.stringify(row)).sort());
  }
  return { tables, smsRequests: service.twilio.requestCount };
}

/**
 * The database holds what it held at `since`, table by table. Two tables are meant to change on refused
 * requests and are compared more loosely:
 * - login_throttle counts failed password logins per username and per address (issue 5: that is how
 *   repeated wrong passwords get slowed down), so each refused login writes there: left out. So are
 *   sms_counter's `reset-name:` rows, which count password-reset requests per name asked for, whether
 *   or not an account has it (CONTRACT §20).
 * - security_event is the audit trail; refused logins and code checks are exactly what it records. It
 *   may grow, but not one earlier row may change or go.
 * users, mfa, one-time codes, SMS cooldowns and counters, refresh tokens, revoked tokens, backup codes,
 * clients, signing keys and service secrets must be exactly as they were. No SMS may have gone out.
 */
async function assertNothingChanged(context: string, since: State = baseline) {
  const now = await captureState();
  const tablesBefore = since.tables;
  assert.deepEqual([...now.tables.keys()].sort(), [...tablesBefore.keys()].sort(), `${context}: tables came or went`);
  for (const [table, rowsThen] of tablesBefore) {
    if (table === 'login_throttle') continue;
    const isCounted = (row: string) => !(table === 'sms_counter' && row.includes('"scope":"reset-name:'));
    const rowsBefore = rowsThen.filter(isCounted);
    const rowsNow = (now.tables.get(table) ?? []).filter(isCounted);
    if (table === 'security_event') {
      const kept = new Set(rowsNow);
      assert.deepEqual(
        rowsBefore.filter((row) => !kept.has(row)),
        [],
        `${context}: audit rows were changed or removed`,
      );
      continue;
    }
    assert.deepEqual(rowsNow, rowsBefore, `${context}: table ${table} changed`);
  }
  assert.equal(now.smsRequests, since.smsRequests, `${context}: an SMS went out`);
}

function assertAlive(answer: Answer) {
  assert.equal(answer.status, 200, `the health check answers: ${answer.status} ${answer.text}`);
}

/** Generated cases run to the end by properties that held. */
let casesRun = 0;

/**
 * PROPERTY_CHECK_EACH_CASE=1 compares the database after every case instead of after each property, so
 * that fast-check shrinks a change of state down to the one request that made it (slower: a dump per case).
 */
const CHECK_EACH_CASE = process.env.PROPERTY_CHECK_EACH_CASE === '1';

/**
 * Runs `check` on `numRuns` generated values, then asks that the server still answers and that the
 * property's requests changed nothing (each property against its own start, so a failure names it).
 */
async function runProperty<T>(
  name: string,
  values: fc.Arbitrary<T>,
  check: (value: T) => Promise<void>,
  numRuns: number,
) {
  const before = await captureState();
  const property = fc.asyncProperty(values, async (value) => {
    const beforeCase = CHECK_EACH_CASE ? await captureState() : undefined;
    await check(value);
    if (beforeCase) await assertNothingChanged(`${name}, this case`, beforeCase);
  });
  await fc.assert(property, { seed: SEED, numRuns, includeErrorInReport: true });
  casesRun += numRuns;
  assertAlive(await send({ method: 'GET', path: '/healthz', headers: {} }, '/healthz'));
  await assertNothingChanged(name, before);
}

// ---------------------------------------------------------------------------------------------------------
// Generators

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
/** What node:http lets into a header value: tab, visible ASCII, space and the Latin-1 upper half. */
const headerChar = fc.oneof(
  { weight: 8, arbitrary: printable },
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.constant('\t') },
);
const headerValue = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: headerChar, maxLength: 80 }) },
  // Long, but all headers together stay under node's 16 KiB (past it node answers 431 before the app sees anything).
  { weight: 1, arbitrary: fc.tuple(headerChar, fc.integer({ min: 200, max: 2_500 })).map(([c, n]) => c.repeat(n)) },
);
const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
/** Header names this test leaves to node:http or sets on purpose elsewhere. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'connection',
  'content-length',
  'content-type',
  'expect',
  'host',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const headerName = fc
  .oneof(
    fc.constantFrom(
      'accept',
      'accept-charset',
      'accept-encoding',
      'accept-language',
      'cache-control',
      'content-encoding',
      'content-language',
      'cookie',
      'forwarded',
      'if-none-match',
      'origin',
      'range',
      'user-agent',
      'x-forwarded-for',
      'x-forwarded-host',
      'x-forwarded-proto',
      'x-http-method-override',
      'x-real-ip',
      'x-request-id',
    ),
    fc.string({ unit: fc.constantFrom(...TOKEN_CHARS), minLength: 1, maxLength: 30 }),
  )
  .filter((name) => !RESERVED_HEADERS.has(name.toLowerCase()));
const extraHeaders = fc.dictionary(headerName, headerValue, { maxKeys: 4 });

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(JSON_TYPE, 'application/json; charset=utf-8', FORM_TYPE) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'text/plain',
      'text/plain; charset=utf-8',
      'application/xml',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'APPLICATION/JSON',
      'Application/Json; Charset=UTF-8',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json;;;=',
      'application/jsonx',
      'application/vnd.api+json',
      `${FORM_TYPE}; charset=iso-8859-1`,
      `${FORM_TYPE}, ${JSON_TYPE}`,
      '',
      '*/*',
      'application/',
      ';',
      'json',
    ),
  },
  { weight: 1, arbitrary: headerValue },
);

/** Strings meant to trip parsers, databases, regexes and encoders. */
const oddString = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\uffff',
  '\ufeff',
  '\u202e',
  '\r\n',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '１２３４５６',
  '٣٤٥٦٧٨',
  '%00',
  '%',
  '../../etc/passwd',
  "' or 1=1 --",
  '"; drop table user; --',
  '{{7*7}}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, meant literally
  '${jndi:ldap://x}',
  '__proto__',
  'constructor',
  '0'.repeat(6),
  '9'.repeat(12),
  '1'.repeat(16),
  'NaN',
  '-0',
  '1e308',
);
const hugeString = fc
  .tuple(fc.string({ minLength: 1, maxLength: 3 }), fc.integer({ min: 1_000, max: 40_000 }))
  .map(([piece, times]) => piece.repeat(Math.ceil(times / piece.length)));
const anyString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: oddString },
  { weight: 2, arbitrary: fc.stringMatching(/^[0-9]{1,16}$/) },
  { weight: 1, arbitrary: hugeString },
);
const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(anyString, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), anyString, { maxKeys: 3 }),
);
/** Strings that still fit in a header once base64url-encoded into a token. */
const shortString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: oddString },
);
const anyValue = fc.oneof({ weight: 3, arbitrary: anyString }, { weight: 2, arbitrary: notAString });

// --- tokens

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The characters the Authorization parser lets through: a spoiled token should still reach the verifier. */
const CREDENTIAL_CHARS = `${BASE64URL}.~+/=`;

/**
 * Percent-encodes all but the unreserved characters, byte by byte (encodeURIComponent throws on a lone
 * surrogate; this spells it as U+FFFD does).
 */
function percentEncoded(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(byte)) && byte < 0x80
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).padStart(2, '0')}`,
    )
    .join('');
}

function encodeSegment(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}
function decodeSegment(segment: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
}

/** Changes to a credential's spelling; never the credential itself. */
function spoiled(secret: string): fc.Arbitrary<string> {
  const last = secret.length - 1;
  return fc
    .oneof(
      fc
        .tuple(fc.nat({ max: last }), fc.constantFrom(...CREDENTIAL_CHARS))
        .map(([at, char]) => secret.slice(0, at) + char + secret.slice(at + 1)),
      fc.nat({ max: last }).map((length) => secret.slice(0, length)),
      fc.nat({ max: last }).map((at) => secret.slice(0, at) + secret.slice(at + 1)),
      fc
        .tuple(fc.nat({ max: secret.length }), fc.string({ unit: fc.constantFrom(...CREDENTIAL_CHARS), minLength: 1 }))
        .map(([at, extra]) => secret.slice(0, at) + extra + secret.slice(at)),
      fc.constantFrom(
        secret.toUpperCase(),
        secret.toLowerCase(),
        [...secret].reverse().join(''),
        `${secret}=`,
        `${secret}==`,
        secret.replaceAll('-', '+').replaceAll('_', '/'),
        secret + secret,
        `${secret}.`,
        `.${secret}`,
      ),
    )
    .filter((candidate) => candidate !== secret);
}

const attackerKey = generateKeyPairSync('ed25519').privateKey;

/** Access tokens that are not the real one: re-spelt, cut up, re-signed, with other algorithms or claims. */
function forged(token: string, others: string[]): fc.Arbitrary<string> {
  const [header = '', payload = '', signature = ''] = token.split('.');
  const claims = decodeSegment(payload);
  const headerFields = decodeSegment(header);
  const other = fc.constantFrom(...others.map((value) => value.split('.')));
  const claimChanges = fc.record(
    {
      sub: fc.oneof(fc.constantFrom(...fixture.userIds), shortString),
      amr: fc.constantFrom(['pwd', 'sms'], ['pwd', 'backup'], ['pwd', 'otp'], ['sms'], [], 'sms', null),
      exp: fc.integer({ min: -1, max: 4_000_000_000 }),
      auth_time: fc.integer({ min: 0, max: 4_000_000_000 }),
      client_id: fc.oneof(fc.constantFrom('public', fixture.clientId), shortString),
      scope: shortString,
      sid: fc.oneof(fc.uuid(), shortString),
      iss: fc.oneof(fc.constant(service.config.issuer), shortString),
      aud: fc.oneof(fc.constant([service.config.issuer, 'x']), shortString),
    },
    { requiredKeys: [] },
  );
  const headerChanges = fc.record(
    {
      alg: fc.constantFrom('none', 'None', 'NONE', 'HS256', 'RS256', 'ES256', 'PS256', 'EdDSA', 'Ed25519', '', null),
      kid: fc.oneof(fc.constant(headerFields.kid), shortString, fc.constant(null)),
      typ: fc.constantFrom('at+jwt', 'JWT', 'application/at+jwt', '', null),
      crit: fc.constant(['exp']),
      jku: fc.constant('http://127.0.0.1:1/jwks'),
      jwk: fc.constant(JSON.parse(fixture.publicJwk)),
      b64: fc.constant(false),
    },
    { requiredKeys: [] },
  );
  const withAttackerSignature = (head: string, body: string) =>
    `${head}.${body}.${sign(null, Buffer.from(`${head}.${body}`), attackerKey).toString('base64url')}`;
  return fc
    .oneof(
      { weight: 4, arbitrary: spoiled(token) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          `${payload}.${header}.${signature}`,
          `${header}.${signature}.${payload}`,
          `${signature}.${payload}.${header}`,
          `${header}.${payload}`,
          `${header}.${payload}.`,
          `${header}..${signature}`,
          `.${payload}.${signature}`,
          `${header}.${payload}.${signature}.${signature}`,
          `${encodeSegment({ ...headerFields, alg: 'none' })}.${payload}.`,
          `${encodeSegment({ ...headerFields, alg: 'none' })}.${payload}.${signature}`,
        ),
      },
      // Segments of two real tokens, each validly signed on its own.
      {
        weight: 2,
        arbitrary: other.map(([h = '', p = '', s = '']) => `${header}.${payload}.${s}|${h}.${p}.${signature}`),
      },
      // Claims changed, the original signature kept.
      {
        weight: 2,
        arbitrary: claimChanges.map((changes) => `${header}.${encodeSegment({ ...claims, ...changes })}.${signature}`),
      },
      // Claims changed (or not) and signed with a key of the attacker's under the real kid.
      {
        weight: 2,
        arbitrary: claimChanges.map((changes) =>
          withAttackerSignature(header, encodeSegment({ ...claims, ...changes })),
        ),
      },
      // Header changed: other algorithms, kids, types, embedded or remote keys.
      {
        weight: 2,
        arbitrary: headerChanges.map(
          (changes) => `${encodeSegment({ ...headerFields, ...changes })}.${payload}.${signature}`,
        ),
      },
      {
        weight: 1,
        arbitrary: headerChanges.map((changes) =>
          withAttackerSignature(encodeSegment({ ...headerFields, ...changes }), payload),
        ),
      },
      // RS/HS confusion: HS256 keyed with the published public key.
      {
        weight: 1,
        arbitrary: claimChanges.map((changes) => {
          const head = encodeSegment({ ...headerFields, alg: 'HS256' });
          const body = encodeSegment({ ...claims, ...changes });
          const mac = createHmac('sha256', fixture.publicJwk).update(`${head}.${body}`).digest('base64url');
          return `${head}.${body}.${mac}`;
        }),
      },
    )
    .chain((candidate) =>
      // The mixed-token case above is two candidates; take either.
      candidate.includes('|') ? fc.constantFrom(...candidate.split('|')) : fc.constant(candidate),
    )
    .filter((candidate) => candidate !== token && !others.includes(candidate));
}

function accessTokens() {
  return [fixture.weakMfaToken, fixture.strongToken, fixture.plainToken, fixture.pendingToken];
}

/** Any credential of the fixture, spoiled: access tokens (forged too), refresh tokens, the admin token, the client secret. */
function spoiledCredential(): fc.Arbitrary<string> {
  const tokens = accessTokens();
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...tokens).chain((token) => forged(token, tokens)) },
    { weight: 1, arbitrary: fc.constantFrom(...fixture.refreshTokens).chain(spoiled) },
    { weight: 1, arbitrary: spoiled(ADMIN_TOKEN) },
    { weight: 1, arbitrary: spoiled(fixture.clientSecret) },
  );
}

/** Authorization headers that must never get through a Bearer guard. */
function refusedAuthorization(): fc.Arbitrary<string> {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  return fc.oneof(
    { weight: 6, arbitrary: spoiledCredential().map((credential) => `Bearer ${credential}`) },
    { weight: 1, arbitrary: headerValue },
    {
      weight: 1,
      arbitrary: fc.string({ unit: fc.constantFrom(...CREDENTIAL_CHARS) }).map((value) => `Bearer ${value}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom('Basic', 'Token', 'MAC', 'Digest', 'Negotiate', 'DPoP', 'Bearer:', 'Bearer=', 'Bearers', ''),
          fc.constantFrom(...accessTokens(), ADMIN_TOKEN),
        )
        .map(([scheme, credential]) => `${scheme} ${credential}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...accessTokens(), ADMIN_TOKEN)
        .chain((credential) =>
          fc.constantFrom(
            credential,
            `Bearer ${credential} ${credential}`,
            `Bearer ${credential},Bearer ${credential}`,
            `Bearer "${credential}"`,
            `Bearer\t${credential}`,
            `Bearer ${credential}\u00a0`,
            basic(fixture.clientId, fixture.clientSecret),
            basic('admin', credential),
          ),
        ),
    },
  );
}

// --- bodies

interface Payload {
  contentType?: string;
  body?: string | Uint8Array;
}

function jsonPayload(body: unknown, type: string = JSON_TYPE): Payload {
  return { contentType: type, body: JSON.stringify(body) };
}

/** JSON objects over the endpoint's own field names (and a few others), with any values at all. */
function fieldsObject(fields: readonly string[], value: fc.Arbitrary<unknown>) {
  return fc.dictionary(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...(fields.length > 0 ? fields : ['x'])) },
      { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '') },
      { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    ),
    value,
    { maxKeys: 6 },
  );
}

/** Bodies that are not JSON objects, or not JSON, or not UTF-8, or very deep. */
const malformedJson: fc.Arbitrary<Payload> = fc.oneof(
  fc.json().map((text) => ({ contentType: JSON_TYPE, body: text })),
  fc
    .tuple(fc.json({ maxDepth: 3 }), fc.nat())
    .map(([text, cut]) => ({ contentType: JSON_TYPE, body: text.slice(0, cut % (text.length + 1)) })),
  fc.tuple(fc.json({ maxDepth: 3 }), fc.string({ minLength: 1, maxLength: 8 })).map(([text, tail]) => ({
    contentType: JSON_TYPE,
    body: `${text}${tail}`,
  })),
  fc.string().map((text) => ({ contentType: JSON_TYPE, body: text })),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ contentType: JSON_TYPE, body: bytes })),
  fc.integer({ min: 1, max: 20_000 }).map((depth) => ({
    contentType: JSON_TYPE,
    body: '['.repeat(depth) + ']'.repeat(depth),
  })),
  fc.constantFrom<Payload>(
    { contentType: JSON_TYPE, body: '\ufeff{}' },
    { contentType: JSON_TYPE, body: '{"a":1,"a":2}' },
    { contentType: JSON_TYPE, body: '{"__proto__":{"polluted":true}}' },
    { contentType: JSON_TYPE },
    { contentType: JSON_TYPE, body: '' },
  ),
);

/** Form bodies: generated fields, duplicated fields, and raw text with broken percent-escapes. */
function formPayload(fields: readonly string[], value: fc.Arbitrary<string>): fc.Arbitrary<Payload> {
  const key = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...fields) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'a[b]', 'a.b', '') },
  );
  return fc
    .oneof(
      {
        weight: 4,
        arbitrary: fc.array(fc.tuple(key, value), { maxLength: 7 }).map((pairs) => new URLSearchParams(pairs)),
      },
      {
        weight: 1,
        arbitrary: fc.string({
          unit: fc.oneof(fc.constantFrom('=', '&', '%', '+', '%00', '%zz', '%e2%82', '%ff', ';', '[]'), printable),
          maxLength: 80,
        }),
      },
    )
    .map((body) => ({ contentType: FORM_TYPE, body: String(body) }));
}

/** A body that no generated value can make valid for `target`: for the admin token, which could otherwise create. */
function refusedAdminBody(target: Endpoint): fc.Arbitrary<Payload> {
  const badUsername = fc
    .tuple(
      fc.string({ maxLength: 10 }),
      fc.constantFrom(' ', '/', '\u0000', 'é', '#', ':', '\u202e'),
      fc.string({ maxLength: 10 }),
    )
    .map(([before, bad, after]) => before + bad + after);
  const badPassword = fc.oneof(
    fc.string({ maxLength: 7 }),
    fc.integer({ min: 1025, max: 5_000 }).map((length) => 'p'.repeat(length)),
  );
  const shaped =
    target === ADMIN_USERS
      ? fc.oneof(
          fc.record({ username: notAString, password: anyValue }, { requiredKeys: ['username'] }),
          fc.record({ username: anyValue, password: notAString }, { requiredKeys: ['password'] }),
          fc.record({ username: badUsername, password: anyString }),
          fc.record({ username: fc.stringMatching(/^[a-z0-9]{1,12}$/), password: badPassword }),
        )
      : fc.oneof(
          fc.record({ name: notAString }),
          fc.record({ name: fc.constant('') }),
          fc.record({ name: fc.integer({ min: 201, max: 2_000 }).map((length) => 'n'.repeat(length)) }),
        );
  return fc.oneof(
    { weight: 3, arbitrary: shaped.map((body) => jsonPayload(body)) },
    {
      weight: 1,
      arbitrary: fc
        .jsonValue()
        .filter((value) => typeof value !== 'object' || value === null || Array.isArray(value))
        .map((value) => jsonPayload(value)),
    },
    { weight: 1, arbitrary: malformedJson.filter((payload) => !isJsonObject(payload.body)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom('text/plain', 'application/xml', FORM_TYPE, 'application/octet-stream', ''),
          fc.string({ maxLength: 60 }),
        )
        .map(([type, body]) => ({ contentType: type, body })),
    },
  );
}

function isJsonObject(body: string | Uint8Array | undefined): boolean {
  try {
    const value = JSON.parse(String(Buffer.from(body ?? '')));
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Anything at all as a body, for `target`. */
function anyBody(target: Endpoint): fc.Arbitrary<Payload> {
  const values = target.body === 'oauth' ? fc.oneof(anyValue, spoiledCredential()) : anyValue;
  return fc.oneof(
    { weight: target.body === 'none' ? 6 : 0, arbitrary: fc.constant<Payload>({}) },
    { weight: 4, arbitrary: fieldsObject(target.fields, values).map((body) => jsonPayload(body)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fieldsObject(target.fields, values), contentType)
        .map(([body, type]) => jsonPayload(body, type)),
    },
    { weight: 2, arbitrary: malformedJson },
    {
      weight: target.body === 'oauth' ? 3 : 1,
      arbitrary: formPayload(
        target.fields.length > 0 ? target.fields : ['x'],
        fc.oneof(anyString, spoiledCredential()),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(contentType, fc.string({ maxLength: 200 }))
        .map(([type, body]) => ({ contentType: type, body })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(hugeString, fc.constantFrom(JSON_TYPE, FORM_TYPE)).map(([pad, type]) => ({
        contentType: type,
        body: type === JSON_TYPE ? JSON.stringify({ pad }) : `pad=${pad}`,
      })),
    },
  );
}

// --- credentials and paths

interface Credentials {
  authorization?: string;
  /** The real admin token: only with a body that cannot create anything. */
  isRealAdmin: boolean;
}

/**
 * Real credentials for `target` that get past its guard but cannot make a generated request change
 * anything: the call is refused for who the caller is (403, 409) or it only reads.
 */
function passingCredentials(target: Endpoint): fc.Arbitrary<Credentials> {
  const bearer = (token: string): Credentials => ({ authorization: `Bearer ${token}`, isRealAdmin: false });
  const { weakMfaToken, strongToken, plainToken, pendingToken } = fixture;
  switch (target.guard) {
    case 'access_token': {
      // strongToken would disable MFA or replace backup codes; plainToken would enrol a phone;
      // pendingToken would spend an attempt at its code (by design): each is left out where it would.
      const allowed: Record<string, string[]> = {
        'GET /mfa/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'DELETE /mfa/': [weakMfaToken, plainToken, pendingToken],
        'PUT /mfa/sms/request/': [weakMfaToken, strongToken, pendingToken],
        'PUT /mfa/sms/verify/': [weakMfaToken, strongToken, plainToken],
        'POST /mfa/recovery/': [weakMfaToken, plainToken, pendingToken],
        'GET /mfa/recovery/': [weakMfaToken, strongToken, plainToken, pendingToken],
        // Generated ids name no factor: each of these answers 404 (or 400) whoever asks.
        'GET /mfa/factors/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'PATCH /mfa/factors/:id/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'DELETE /mfa/factors/:id/': [weakMfaToken, strongToken, plainToken, pendingToken],
        // A request would store a pending secret or challenge; the weak login is refused (MFA is on).
        'PUT /mfa/totp/request/': [weakMfaToken],
        'PUT /mfa/webauthn/request/': [weakMfaToken],
        // The weak login is refused (MFA is on, and it is old): the password stays.
        'PUT /mfa/password/': [weakMfaToken],
        // The weak login may not change the address (MFA is on); no code is pending for any user.
        'PUT /mfa/email/request/': [weakMfaToken],
        'PUT /mfa/email/verify/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'GET /mfa/email/': [weakMfaToken, strongToken, plainToken, pendingToken],
        // No request waits for these users: reading and cancelling change nothing.
        'GET /mfa/recovery-request/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'DELETE /mfa/recovery-request/': [weakMfaToken, strongToken, plainToken, pendingToken],
        // No user has two passkeys: 409 for the strong login, 401 for the others.
        'DELETE /mfa/password/': [weakMfaToken, strongToken, plainToken, pendingToken],
        // Nothing is pending for these users: nothing to verify.
        'PUT /mfa/totp/verify/': [weakMfaToken, strongToken, plainToken, pendingToken],
        'PUT /mfa/webauthn/verify/': [weakMfaToken, strongToken, plainToken, pendingToken],
      };
      return fc.constantFrom(...(allowed[`${target.method} ${target.route}`] ?? [weakMfaToken])).map(bearer);
    }
    case 'admin':
      return ADMIN_WITHOUT_SAFE_BODY.has(target)
        ? refusedAuthorization().map((authorization) => ({ authorization, isRealAdmin: false }))
        : fc.constant({ authorization: `Bearer ${ADMIN_TOKEN}`, isRealAdmin: true });
    case 'client':
      return fc.constantFrom<Credentials>(
        { isRealAdmin: false },
        {
          authorization: `Basic ${Buffer.from(`${fixture.clientId}:${fixture.clientSecret}`).toString('base64')}`,
          isRealAdmin: false,
        },
      );
    default:
      return fc.constant({ isRealAdmin: false });
  }
}

function credentialsFor(target: Endpoint): fc.Arbitrary<Credentials> {
  return fc.oneof(
    { weight: 6, arbitrary: passingCredentials(target) },
    { weight: 1, arbitrary: fc.constant<Credentials>({ isRealAdmin: false }) },
    { weight: 2, arbitrary: refusedAuthorization().map((authorization) => ({ authorization, isRealAdmin: false })) },
  );
}

/** The route's path, usually as declared, sometimes re-spelt; `:id` filled with user ids or anything. */
function pathFor(target: Endpoint): fc.Arbitrary<string> {
  // Past 100 characters the router itself answers 414: the test of errors before routing covers that.
  const id = fc.oneof(fc.constantFrom(...fixture.userIds), fc.uuid(), shortString).map(percentEncoded);
  const base = target.route.includes(':id')
    ? id.filter((value) => value.length <= 100).map((value) => target.route.replace(':id', value))
    : fc.constant(target.route);
  const query = fc.oneof(
    { weight: 6, arbitrary: fc.constant('') },
    {
      weight: 2,
      arbitrary: fc
        .dictionary(fc.oneof(fc.constantFrom(...target.fields, 'access_token', 'token'), fc.string()), shortString, {
          maxKeys: 3,
        })
        .map((entries) => `?${new URLSearchParams(entries)}`),
    },
    { weight: 1, arbitrary: fc.constantFrom('?', '?%', '?a=%zz', '?__proto__[x]=1', '?a=1&a=2', '??', '?#') },
  );
  return fc
    .tuple(
      base,
      fc.constantFrom(
        (path: string) => path,
        (path: string) => path,
        (path: string) => path,
        (path: string) => path.replace(/\/$/, ''),
        (path: string) => `${path}/`,
        (path: string) => path.replace('/', '//'),
        (path: string) => path.toUpperCase(),
        (path: string) => `${path}%00`,
        (path: string) => `${path}/..`,
        (path: string) => `${path};x=1`,
      ),
      query,
    )
    .map(([path, respell, search]) => respell(path) + search);
}

function attempt(
  target: Endpoint,
  path: string,
  credentials: Credentials,
  payload: Payload,
  headers: Record<string, string>,
): Attempt {
  const all: Record<string, string> = { ...headers };
  if (credentials.authorization !== undefined) all.authorization = credentials.authorization;
  if (payload.contentType !== undefined) all['content-type'] = payload.contentType;
  return { method: target.method, path, headers: all, body: payload.body };
}

// ---------------------------------------------------------------------------------------------------------
// What the properties found, kept as plain examples: these do not depend on the seed or on the fixture's
// random tokens. They run first, while no login is throttled yet.

test('an access token re-spelt without changing its bytes (== padding, spare bits of the last character) is refused', async () => {
  const [header, payload, signature = ''] = fixture.strongToken.split('.');
  const bytes = Buffer.from(signature, 'base64url');
  // The last character of an 86-character segment carries 2 bits of the signature and 4 spare ones.
  const sameBytes = [...BASE64URL]
    .map((char) => signature.slice(0, -1) + char)
    .filter((spelling) => spelling !== signature && Buffer.from(spelling, 'base64url').equals(bytes));
  assert.ok(sameBytes.length > 0, 'the signature has other spellings of the same bytes');
  for (const spelling of [...sameBytes.map((other) => `${header}.${payload}.${other}`), `${fixture.strongToken}==`]) {
    for (const target of [GET_MFA, NEW_BACKUP_CODES, DELETE_MFA]) {
      const request = attempt(
        target,
        target.route,
        { authorization: `Bearer ${spelling}`, isRealAdmin: false },
        {},
        {},
      );
      assertRefused(await send(request, target.route), 'invalid_token', 'Bearer', describeAttempt(request));
    }
  }
  await assertNothingChanged('re-spelt tokens');
});

test('a NUL in a username, client id, client name or user id is refused like any unknown value, on both dialects', async () => {
  // PostgreSQL text cannot hold NUL: before the fix each of these was a 500 there.
  const cases: [Attempt, number, string][] = [
    [
      {
        method: 'POST',
        path: TOKEN.route,
        headers: { 'content-type': JSON_TYPE },
        body: JSON.stringify({ grant_type: 'password', username: 'prop-\u0000plain', password: 'not the password' }),
      },
      400,
      'invalid_grant',
    ],
    ...[TOKEN, REVOKE, INTROSPECT].flatMap((target): [Attempt, number, string][] => [
      [
        {
          method: 'POST',
          path: target.route,
          headers: { 'content-type': FORM_TYPE },
          body: `grant_type=password&username=a&password=b&token=t&client_id=${fixture.clientId}%00&client_secret=s`,
        },
        401,
        'invalid_client',
      ],
      [
        {
          method: 'POST',
          path: target.route,
          headers: {
            'content-type': FORM_TYPE,
            authorization: `Basic ${Buffer.from(`${fixture.clientId}%00:${fixture.clientSecret}`).toString('base64')}`,
          },
          body: 'grant_type=password&username=a&password=b&token=t',
        },
        401,
        'invalid_client',
      ],
    ]),
    [
      {
        method: 'POST',
        path: ADMIN_CLIENTS.route,
        headers: { 'content-type': JSON_TYPE, authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ name: 'an app\u0000' }),
      },
      400,
      'invalid_request',
    ],
    [
      {
        method: 'GET',
        path: `/admin/users/${fixture.userIds[0]}%00/events`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      },
      404,
      'not_found',
    ],
  ];
  for (const [request, status, error] of cases) {
    const answer = await send(request, 'examples');
    const context = describeAttempt(request);
    assertContractAnswer(answer, context);
    assert.equal(answer.status, status, `${context}\n=> ${answer.status} ${answer.text}`);
    assert.equal(JSON.parse(answer.text).error, error, `${context}\n=> ${answer.text}`);
  }
  await assertNothingChanged('NUL examples');
});

// ---------------------------------------------------------------------------------------------------------
// Properties

test('generated bodies, content types, headers and paths at every endpoint: never a 5xx, only contract errors, nothing changed', async () => {
  const cases = fc.constantFrom(...ENDPOINTS).chain((target) =>
    fc
      .record({
        target: fc.constant(target),
        path: pathFor(target),
        headers: extraHeaders,
        credentials: credentialsFor(target),
      })
      .chain((partial) =>
        (partial.credentials.isRealAdmin ? refusedAdminBody(target) : anyBody(target))
          .map((payload) => attempt(target, partial.path, partial.credentials, payload, partial.headers))
          .map((request) => ({ target, request })),
      ),
  );
  await runProperty(
    'generated requests',
    cases,
    async ({ target, request }) => {
      const context = describeAttempt(request);
      const answer = await send(request, target.route);
      assertContractAnswer(answer, context);
      if (answer.status < 400) {
        assert.ok(target.mayAnswer2xx, `${context}\n=> ${answer.status}: a generated request succeeded`);
      }
      if (target === INTROSPECT && answer.status === 200) {
        assert.deepEqual(JSON.parse(answer.text), { active: false }, `${context}\n=> ${answer.text}`);
      }
      if (target === REVOKE && answer.status === 200) assert.equal(answer.text, '', context);
    },
    RUNS.bodies,
  );
});

test('forged, spoiled and foreign Authorization headers get 401 with WWW-Authenticate: Bearer at every guarded endpoint', async () => {
  const guarded = [...GUARDED_BY_ACCESS_TOKEN, ...GUARDED_BY_ADMIN_TOKEN];
  // Bodies that would succeed behind the guard, so a credential that slipped through would show.
  const bodies: Record<string, () => Payload> = {
    'PUT /mfa/sms/request/': () => jsonPayload({ phone_number: nextPhone() }),
    'PUT /mfa/sms/verify/': () => jsonPayload({ mfa_code: '123456' }),
    'POST /admin/users': () =>
      jsonPayload({ username: `made-${randomBytes(4).toString('hex')}`, password: 'long enough' }),
    'POST /admin/clients': () => jsonPayload({ name: 'made by a forged token' }),
    'POST /admin/webhooks': () => jsonPayload({ url: 'https://hooks.example.com/forged' }),
    'PUT /mfa/totp/request/': () => jsonPayload({}),
    'PUT /mfa/webauthn/request/': () => jsonPayload({}),
    'PUT /mfa/language/': () => jsonPayload({ language: 'de' }),
  };
  await runProperty(
    'forged authorization',
    fc.tuple(fc.constantFrom(...guarded), refusedAuthorization()),
    async ([target, authorization]) => {
      const path = target.route.replace(':id', fixture.userIds[1] ?? '');
      const request = attempt(
        target,
        path,
        { authorization, isRealAdmin: false },
        bodies[`${target.method} ${target.route}`]?.() ?? {},
        {},
      );
      assertRefused(await send(request, target.route), 'invalid_token', 'Bearer', describeAttempt(request));
    },
    RUNS.authorization,
  );
});

test('spoiled client credentials get 401 invalid_client at the token, revocation and introspection endpoints', async () => {
  const { clientId, clientSecret } = fixture;
  const credentials = fc.oneof(
    spoiled(clientSecret).map((secret) => [clientId, secret] as const),
    spoiled(clientId).map((id) => [id, clientSecret] as const),
    // Short enough for a header: past 16 KiB node answers 431 itself.
    fc.tuple(
      fc.uuid(),
      anyString.filter((secret) => secret.length > 0 && secret.length < 2_000),
    ),
    fc.constant([clientSecret, clientId] as const),
    fc.constant(['public', clientSecret] as const),
    fc.constant([clientId, ''] as const),
  );
  const delivery = fc.constantFrom('basic', 'post', 'basic-malformed');
  await runProperty(
    'spoiled client credentials',
    fc.tuple(fc.constantFrom(...OAUTH_ENDPOINTS), credentials, delivery),
    async ([target, [id, secret], how]) => {
      // Bodies the endpoints would answer with 2xx, or refuse only later, for the real client.
      const form: Record<string, string> =
        target === TOKEN
          ? { grant_type: 'refresh_token', refresh_token: fixture.refreshTokens[1] ?? '' }
          : { token: fixture.strongToken };
      const headers: Record<string, string> = { 'content-type': FORM_TYPE };
      if (how === 'post') {
        form.client_id = id;
        if (secret !== '') form.client_secret = secret;
      } else if (how === 'basic') {
        headers.authorization = `Basic ${Buffer.from(`${percentEncoded(id)}:${percentEncoded(secret)}`).toString('base64')}`;
      } else {
        headers.authorization = `Basic ${Buffer.from(`${id}${secret}`).toString('base64')}`;
      }
      const request: Attempt = { method: 'POST', path: target.route, headers, body: String(new URLSearchParams(form)) };
      const answer = await send(request, target.route);
      const context = describeAttempt(request);
      // An empty client_secret_post is no credential at all: the schema refuses it before any lookup.
      if (how === 'post' && (id === '' || id.length > 200 || secret.length > 200)) {
        assertContractAnswer(answer, context);
        assert.equal(answer.status, 400, `${context}\n=> ${answer.status} ${answer.text}`);
        return;
      }
      assertRefused(answer, 'invalid_client', 'Basic', context);
    },
    RUNS.clientCredentials,
  );
});

test('generated form bodies at the token, revocation and introspection endpoints: no 5xx, and introspection of any of them is {active:false}', async () => {
  const basic = `Basic ${Buffer.from(`${fixture.clientId}:${fixture.clientSecret}`).toString('base64')}`;
  const value = fc.oneof(
    { weight: 3, arbitrary: anyString },
    { weight: 3, arbitrary: spoiledCredential() },
    { weight: 1, arbitrary: fc.constantFrom('password', 'refresh_token', 'client_credentials', 'authorization_code') },
    { weight: 1, arbitrary: fc.constantFrom('prop-plain', 'prop-mfa', 'prop-pending', fixture.clientId) },
  );
  await runProperty(
    'generated forms',
    fc.tuple(
      fc.boolean(),
      fc.constantFrom(
        FORM_TYPE,
        `${FORM_TYPE}; charset=utf-8`,
        `${FORM_TYPE}; charset=iso-8859-1`,
        'Application/X-WWW-Form-Urlencoded',
      ),
      fc
        .constantFrom(...OAUTH_ENDPOINTS)
        .chain((target) => fc.tuple(fc.constant(target), formPayload(target.fields, value))),
    ),
    async ([withClient, type, [target, payload]]) => {
      const headers: Record<string, string> = { 'content-type': type };
      if (withClient) headers.authorization = basic;
      const request: Attempt = { method: 'POST', path: target.route, headers, body: payload.body };
      const context = describeAttempt(request);
      const answer = await send(request, target.route);
      assertContractAnswer(answer, context);
      if (target === TOKEN)
        assert.ok(answer.status >= 400, `${context}\n=> ${answer.status}: tokens for a generated form`);
      if (target === REVOKE && answer.status < 400) assert.equal(answer.status, 200, context);
      if (target === INTROSPECT && answer.status < 400) {
        assert.ok(withClient, `${context}\n=> introspection answered without client authentication`);
        assert.deepEqual(JSON.parse(answer.text), { active: false }, `${context}\n=> ${answer.text}`);
      }
    },
    RUNS.forms,
  );
});

/** Writes `bytes` on a fresh connection and resolves with whatever comes back before it closes (or 3 s pass). */
function sendRaw(bytes: string): Promise<string> {
  countSent('raw');
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 3_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.end(Buffer.from(bytes, 'latin1'));
  });
}

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** The HTTP/1.1 answers in `raw`, one after another (a body node read as a second request gets its own). */
function parseAnswers(raw: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = new Map(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    rest = rest.slice(headEnd + 4);
    let body = '';
    if (headers.get('transfer-encoding') === 'chunked') {
      for (let size = Number.parseInt(rest, 16); size > 0; size = Number.parseInt(rest, 16)) {
        const start = rest.indexOf('\r\n') + 2;
        body += rest.slice(start, start + size);
        rest = rest.slice(start + size + 2);
      }
      rest = rest.slice(rest.indexOf('\r\n\r\n') + 4);
    } else {
      const length = Number(headers.get('content-length') ?? 0);
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    answers.push({ status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString() });
  }
  return answers;
}

test('requests refused before routing (malformed HTTP, huge headers, over-long or badly escaped path parameters) get a 4xx with the contract error body', async () => {
  const control = fc
    .integer({ min: 0, max: 0x1f })
    .filter((code) => code !== 9)
    .map((code) => String.fromCharCode(code));
  const requestLine = fc.oneof(
    fc.constantFrom('GET /healthz HTTP/1.1', 'POST /mfa/oauth2/token/ HTTP/1.1', 'PUT /mfa/sms/request/ HTTP/1.1'),
    fc
      .tuple(
        fc.constantFrom('GET', 'POST', 'BREW', 'G\u0001T', '', 'get'),
        fc.string({ maxLength: 30 }),
        fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/9.9', 'HTTPS/1.1', ''),
      )
      .map(([method, path, version]) => `${method} /${path} ${version}`),
    // Path parameters the router refuses before any route runs: too long (414), or not decodable (400).
    fc
      .oneof(
        fc.integer({ min: 101, max: 3_000 }).map((length) => 'a'.repeat(length)),
        fc.constantFrom('%zz', '%', '%E0%A4%A', '%C0%AF', '%ED%A0%80', `${fixture.userIds[0]}%`),
      )
      .map((id) => `GET /admin/users/${id}/events HTTP/1.1`),
  );
  const header = fc.oneof(
    fc.tuple(headerName, headerValue).map(([name, value]) => `${name}: ${value}`),
    fc.tuple(headerName, control).map(([name, bad]) => `${name}: a${bad}b`),
    fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([name, value]) => `${name}${value}`),
    // Past node's 16 KiB of headers: 431.
    fc.integer({ min: 17_000, max: 40_000 }).map((length) => `X-Big: ${'b'.repeat(length)}`),
    fc.constantFrom(
      'Content-Length: -1',
      'Content-Length: 1e3',
      'Content-Length: 5\r\nContent-Length: 6',
      'Transfer-Encoding: chunked\r\nContent-Length: 3',
      'Transfer-Encoding: gzip, chunked',
      'Transfer-Encoding: identity',
      ' folded: line',
      'Host:',
      'Authorization: Bearer \u0000',
      `Authorization: Bearer ${ADMIN_TOKEN}`,
    ),
  );
  const body = fc.oneof(
    fc.constant(''),
    fc.string({ maxLength: 60 }),
    fc.constantFrom('zz\r\nabc\r\n0\r\n\r\n', '0\r\n\r\n', '5\r\nab'),
  );
  await runProperty(
    'requests refused before routing',
    fc.tuple(
      requestLine,
      // With and without Host, and with Expect values node would answer by itself.
      fc.constantFrom(['Host: x'], ['Host: x'], [], ['Host: x', 'Expect: 100-continue'], ['Host: x', 'Expect: tea']),
      fc.array(header, { maxLength: 4 }),
      fc.constantFrom('\r\n', '\n'),
      body,
    ),
    async ([line, framing, headers, eol, rest]) => {
      const bytes = [line, ...framing, ...headers, '', rest].join(eol);
      const raw = await sendRaw(bytes);
      const context = JSON.stringify(bytes.slice(0, 300));
      // Node may drop a connection it cannot read at all without a word; that is no 5xx either.
      for (const answer of parseAnswers(raw)) {
        assertContractAnswer(
          { status: answer.status, headers: Object.fromEntries(answer.headers), text: answer.body },
          context,
        );
      }
    },
    RUNS.rawHttp,
  );
});

test('after all of it: the server answers, nothing changed, nothing was logged as an error, and the real credentials still work', async (t) => {
  const answered = await send({ method: 'GET', path: '/readyz', headers: {} }, '/readyz');
  assert.equal(answered.status, 200, answered.text);
  await assertNothingChanged('after every property');

  // Every route of the OpenAPI document is here, and got its share of the generated requests.
  const document = JSON.parse(
    (await send({ method: 'GET', path: '/openapi.json', headers: {} }, '/openapi.json')).text,
  );
  for (const [path, operations] of Object.entries(document.paths as Record<string, object>)) {
    for (const method of Object.keys(operations)) {
      const route = path.replace(/\{(\w+)\}/g, ':$1');
      assert.ok(
        ENDPOINTS.some((target) => target.route === route && target.method === method.toUpperCase()),
        `${method.toUpperCase()} ${route} has no generated requests: add it to ENDPOINTS`,
      );
    }
  }
  for (const target of ENDPOINTS) {
    assert.ok(
      (sentTo.get(target.route) ?? 0) >= 20,
      `only ${sentTo.get(target.route) ?? 0} requests to ${target.route}`,
    );
  }
  const total = [...sentTo.values()].reduce((sum, count) => sum + count, 0);
  assert.ok(total >= casesRun && casesRun > 0, `${total} requests for ${casesRun} generated cases`);
  t.diagnostic(`${casesRun} generated cases, ${total} requests (seed ${SEED})`);

  const errors = service
    .log()
    .split('\n')
    .filter((line) => /"level":(50|60)\b/.test(line));
  assert.deepEqual(errors, [], 'client input was logged as an error');

  const status = await expectStatus(service.call('/mfa/', { token: fixture.strongToken }), 200);
  assert.deepEqual(status.enabled, true);
  const remaining = await expectStatus(service.call('/mfa/recovery/', { token: fixture.strongToken }), 200);
  assert.equal(remaining.remaining, 10);
  const refreshed = await expectStatus(
    service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: { grant_type: 'refresh_token', refresh_token: fixture.refreshTokens[0] },
    }),
    200,
  );
  assert.equal(typeof refreshed.access_token, 'string');
});
