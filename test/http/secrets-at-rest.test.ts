import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import argon2 from '@node-rs/argon2';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { onPostgres, POSTGRES_URL } from '../support/postgres.js';
import { ADMIN_TOKEN, expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const USERNAME = 'secrets-at-rest';
const PASSWORD = `pw-${randomBytes(12).toString('hex')}`;
const TWILIO_AUTH_TOKEN = `twilio-token-${randomBytes(12).toString('hex')}`;
const PHONE = nextPhone();

/** Every secret the flow below handled, by what it is, for the failure messages. */
const secrets: { what: string; value: string }[] = [];
/** The six-digit SMS codes (sent and guessed): too short to search for as plain text in a log. */
const codes: string[] = [];

let service: Service;
let closed = false;
/** Hard links to the SQLite files, made before close(): they outlive its rm and show the files as it left them. */
let linkDir: string | undefined;

function keep(what: string, value: string | undefined) {
  assert.ok(value, `the flow produced no ${what}`);
  secrets.push({ what, value });
  return value;
}

/** A six-digit code that is not `code`. */
function otherCode(code: string) {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

function lastCode() {
  const code = service.twilio.lastCodeFor(`+${PHONE}`);
  codes.push(code);
  return code;
}

/** Keeps the tokens of a token response, and the access token's signature on its own. */
function keepTokens(body: { access_token?: string; refresh_token?: string }, label: string) {
  const access = keep(`${label} access token`, body.access_token);
  keep(`${label} access token signature`, access.split('.')[2]);
  keep(`${label} refresh token`, body.refresh_token);
  return { access, refresh: body.refresh_token ?? '' };
}

function tokenRequest(form: Record<string, string>, headers: Record<string, string> = {}) {
  return service.call('/mfa/oauth2/token/', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

/**
 * The whole life of a user, through the real service: the admin makes the user and a confidential
 * client; the user logs in, enrols a phone (after a wrong code), logs in with SMS codes (after a wrong
 * one), makes and uses backup codes, refreshes and revokes refresh tokens as a public client, logs in
 * through the confidential client with Basic and with a form post, refreshes, introspects and revokes
 * there, and gets a few requests carrying secrets (a wrong password among them) refused.
 */
before(async () => {
  service = await startService({ env: { TWILIO_AUTH_TOKEN } });
  keep('ADMIN_TOKEN', ADMIN_TOKEN);
  keep('Twilio auth token', TWILIO_AUTH_TOKEN);
  keep('password', PASSWORD);

  await service.createUser(USERNAME, PASSWORD);
  const client = await expectStatus(
    service.call('/admin/clients', { method: 'POST', token: ADMIN_TOKEN, body: { name: 'secrets-at-rest app' } }),
    201,
  );
  const clientSecret = keep('client secret', client.client_secret);
  const basic = keep(
    'client Basic credentials',
    Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(clientSecret)}`).toString('base64'),
  );

  // Password-only login, then SMS enrolment with one wrong guess first.
  const weak = keepTokens(await expectStatus(service.login(USERNAME, PASSWORD), 200), 'password-only').access;
  await expectStatus(
    service.call('/mfa/sms/request/', { method: 'PUT', token: weak, body: { phone_number: PHONE } }),
    200,
  );
  const enrolCode = lastCode();
  const wrongEnrolCode = otherCode(enrolCode);
  codes.push(wrongEnrolCode);
  const verify = (code: string) =>
    service.call('/mfa/sms/verify/', { method: 'PUT', token: weak, body: { mfa_code: code } });
  await expectStatus(verify(wrongEnrolCode), 400);
  await expectStatus(verify(enrolCode), 200);

  // Login with the SMS code, after a wrong one.
  assert.equal((await expectStatus(service.login(USERNAME, PASSWORD), 200)).mfa_required, true);
  const loginCode = lastCode();
  const wrongLoginCode = otherCode(loginCode);
  codes.push(wrongLoginCode);
  await expectStatus(service.login(USERNAME, PASSWORD, { mfa_code: wrongLoginCode }), 400);
  const strong = keepTokens(
    await expectStatus(service.login(USERNAME, PASSWORD, { mfa_code: loginCode }), 200),
    'password+SMS',
  );

  // Backup codes: made, one used, one wrong one tried.
  const { backup_codes: backupCodes } = await expectStatus(
    service.call('/mfa/recovery/', { method: 'POST', token: strong.access }),
    200,
  );
  assert.equal(backupCodes.length, 10);
  for (const code of backupCodes) keep('backup code', code);
  const wrongBackupCode = String((Number(backupCodes[0]) + 1) % 1e12).padStart(12, '0');
  if (!backupCodes.includes(wrongBackupCode)) {
    keep('wrong backup code', wrongBackupCode);
    await expectStatus(service.login(USERNAME, PASSWORD, { backup_code: wrongBackupCode }), 400);
  }
  const backup = keepTokens(
    await expectStatus(service.login(USERNAME, PASSWORD, { backup_code: backupCodes[1] }), 200),
    'backup',
  );

  // A public client refreshes the SMS login, then revokes the new refresh token (RFC 7009, no client
  // credentials) and the backup login's: both are dead afterwards.
  const publicRefresh = keepTokens(
    await expectStatus(tokenRequest({ grant_type: 'refresh_token', refresh_token: strong.refresh }), 200),
    'public refresh',
  );
  for (const refresh of [publicRefresh.refresh, backup.refresh]) {
    await expectStatus(
      service.call('/mfa/oauth2/revoke/', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: refresh, token_type_hint: 'refresh_token' }).toString(),
      }),
      200,
    );
    await expectStatus(tokenRequest({ grant_type: 'refresh_token', refresh_token: refresh }), 400);
  }

  // The password grant through the confidential client: Basic for the SMS request, a form post for the code.
  service.clock.advance(31);
  const credentials = { grant_type: 'password', username: USERNAME, password: PASSWORD };
  const viaBasic = await expectStatus(tokenRequest(credentials, { authorization: `Basic ${basic}` }), 200);
  assert.equal(viaBasic.mfa_required, true);
  const clientCode = lastCode();
  const viaPost = keepTokens(
    await expectStatus(
      tokenRequest({ ...credentials, mfa_code: clientCode, client_id: client.client_id, client_secret: clientSecret }),
      200,
    ),
    'confidential client',
  );

  // Refresh rotation, introspection and revocation by the client, then reuse of the spent refresh token.
  const refreshed = keepTokens(
    await expectStatus(
      tokenRequest(
        { grant_type: 'refresh_token', refresh_token: viaPost.refresh },
        { authorization: `Basic ${basic}` },
      ),
      200,
    ),
    'refreshed',
  );
  const introspected = await expectStatus(
    service.call('/mfa/oauth2/introspect/', {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.access }).toString(),
    }),
    200,
  );
  assert.equal(introspected.active, true);
  await expectStatus(
    service.call('/mfa/oauth2/revoke/', {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.access, token_type_hint: 'access_token' }).toString(),
    }),
    200,
  );
  await expectStatus(
    tokenRequest({ grant_type: 'refresh_token', refresh_token: viaPost.refresh }, { authorization: `Basic ${basic}` }),
    400,
  );

  // Refused requests carrying secrets: a wrong password, a wrong client secret, a broken JSON body, a wrong
  // admin token.
  const wrongPassword = keep('wrong password', `wrong-${randomBytes(12).toString('hex')}`);
  await expectStatus(service.login(USERNAME, wrongPassword), 400);
  await expectStatus(
    tokenRequest({ ...credentials, client_id: client.client_id, client_secret: `${clientSecret}x` }),
    401,
  );
  await expectStatus(
    service.call('/mfa/oauth2/token/', {
      method: 'POST',
      body: `{"grant_type":"password","username":"${USERNAME}","password":"${PASSWORD}"`,
    }),
    400,
  );
  const wrongAdminToken = keep('wrong admin token', `${ADMIN_TOKEN}-but-wrong`);
  await expectStatus(
    service.call('/admin/users', {
      method: 'POST',
      token: wrongAdminToken,
      body: { username: 'never-made', password: PASSWORD },
    }),
    401,
  );

  for (const message of service.twilio.messages) {
    keep('SMS text', message.body);
    keep('Twilio Authorization header', message.authorization.replace(/^Basic /, ''));
  }
  for (const code of codes) keep('SMS code', code);
  assert.equal(service.twilio.messages.length, 3, 'enrolment, login and client login each sent one SMS');
});

after(async () => {
  if (!closed) await service.close();
  if (linkDir) rmSync(linkDir, { recursive: true, force: true });
});

/** The SQLite file and its -wal and -shm companions that exist under `path`'s name. */
function sqliteFiles(path: string) {
  return [path, `${path}-wal`, `${path}-shm`].filter((file) => existsSync(file));
}

/** The long secrets (tokens, passwords, backup codes, SMS texts…) found anywhere in `bytes`. */
function longSecretsIn(bytes: Buffer): string[] {
  return secrets
    .filter(({ value }) => value.length > 6 && bytes.includes(Buffer.from(value, 'utf8')))
    .map(({ what, value }) => `${what} ${value}`);
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * The SMS codes found in database content. Columns lie side by side there, so a code stored in clear
 * may touch other digits: every occurrence counts, except inside a UUID or the phone number (stored on
 * purpose, and long enough to hold six given digits by chance).
 */
function codesInDatabase(text: string): string[] {
  const innocent: [number, number][] = [];
  for (const match of text.matchAll(UUID)) innocent.push([match.index, match.index + match[0].length]);
  for (let at = text.indexOf(PHONE); at >= 0; at = text.indexOf(PHONE, at + 1)) innocent.push([at, at + PHONE.length]);
  const found: string[] = [];
  for (const code of codes) {
    for (let at = text.indexOf(code); at >= 0; at = text.indexOf(code, at + 1)) {
      if (!innocent.some(([start, end]) => start <= at && at + code.length <= end)) {
        found.push(`code ${code} at ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 20), at + 26))}`);
        break;
      }
    }
  }
  return found;
}

/**
 * The SMS codes found in the log, as whole numbers: the log is full of longer digit runs (times in ms,
 * response times) that hold six given digits by chance, while a logged code stands alone in its JSON.
 */
function codesInLog(log: string): string[] {
  return codes.filter((code) => new RegExp(`(?<![0-9])${code}(?![0-9])`).test(log)).map((code) => `code ${code}`);
}

function secretsInDatabaseFile(file: string): string[] {
  const bytes = readFileSync(file);
  return [...longSecretsIn(bytes), ...codesInDatabase(bytes.toString('latin1'))];
}

/** The user's stored password hash: from the SQLite file directly, or from the database dump on PostgreSQL. */
async function storedPasswordHash(): Promise<string | undefined> {
  if (service.dialect === 'sqlite') {
    const connection = new SQLite(service.dbPath, { readonly: true });
    try {
      const row = connection.prepare('select password_hash from user where username = ?').get(USERNAME) as
        | { password_hash: string }
        | undefined;
      return row?.password_hash;
    } finally {
      connection.close();
    }
  }
  const line = (await service.dumpDatabase()).split('\n').find((table) => table.startsWith('user: '));
  const users = JSON.parse(line?.slice('user: '.length) ?? '[]') as { username: string; password_hash: string }[];
  return users.find((user) => user.username === USERNAME)?.password_hash;
}

/**
 * The on-disk bytes of every relation in the service's schema (tables with their dead rows, indexes,
 * TOAST tables), after a CHECKPOINT has written shared buffers out. Reading server files takes a
 * superuser (or pg_checkpoint and pg_read_server_files), as the local test server's postgres is.
 */
async function postgresRelationFiles(): Promise<{ name: string; bytes: Buffer }[]> {
  const options = new URL(service.config.databaseUrl).searchParams.get('options') ?? '';
  const schema = /search_path=(\w+)/.exec(options)?.[1];
  assert.ok(schema, `no schema in ${options}`);
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query('checkpoint');
    const relations = await client.query<{ name: string; path: string }>(
      `select c.relname as name, pg_relation_filepath(c.oid) as path
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and c.relkind in ('r', 'i')
       union all
       select t.relname, pg_relation_filepath(t.oid)
         from pg_class c join pg_namespace n on n.oid = c.relnamespace join pg_class t on t.oid = c.reltoastrelid
        where n.nspname = $1`,
      [schema],
    );
    const files: { name: string; bytes: Buffer }[] = [];
    for (const { name, path } of relations.rows) {
      const read = await client.query<{ bytes: Buffer }>('select pg_read_binary_file($1) as bytes', [path]);
      files.push({ name, bytes: read.rows[0]?.bytes ?? Buffer.alloc(0) });
    }
    return files;
  } finally {
    await client.end();
  }
}

describe('secrets at rest', () => {
  test('passwords are stored as Argon2id hashes with at least m=19456, t=2, p=1', async () => {
    const hash = await storedPasswordHash();
    assert.ok(hash, 'the user row exists');
    // A PHC string; the parameters in any order (the earlier `argon2` package wrote m,p,t, the reference m,t,p).
    const match = /^\$argon2id\$v=19\$([a-z]=\d+(?:,[a-z]=\d+)*)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/.exec(hash);
    assert.ok(match?.[1], `not an Argon2id PHC string: ${hash}`);
    const parameters = Object.fromEntries(match[1].split(',').map((pair) => [pair[0], Number(pair.slice(2))]));
    assert.deepEqual(Object.keys(parameters).sort(), ['m', 'p', 't'], hash);
    assert.ok(parameters.m >= 19_456, `m=${parameters.m}`);
    assert.ok(parameters.t >= 2, `t=${parameters.t}`);
    assert.ok(parameters.p >= 1, `p=${parameters.p}`);
    assert.equal(await argon2.verify(hash, PASSWORD), true, 'the hash is of this password');
    assert.equal(await argon2.verify(hash, `${PASSWORD}x`), false);
  });

  test('no row of any table holds a password, code, SMS text, token or secret', async () => {
    const dump = await service.dumpDatabase();
    // The search sees the data: what is stored in clear on purpose is found.
    assert.ok(dump.includes(USERNAME), 'the username is in the dump');
    assert.ok(dump.includes(PHONE), 'the enrolled phone number is in the dump');
    assert.deepEqual([...longSecretsIn(Buffer.from(dump, 'utf8')), ...codesInDatabase(dump)], []);
  });

  test('the log holds no secret and no full phone number, only its last 4 digits', () => {
    const log = service.log();
    assert.ok(log.length > 0, 'something was logged');
    assert.deepEqual([...longSecretsIn(Buffer.from(log, 'utf8')), ...codesInLog(log)], []);
    assert.ok(!log.includes(PHONE), `the log holds the phone number ${PHONE}`);
    assert.ok(!log.includes(PHONE.slice(1)), 'the log holds the national number');
    assert.ok(log.includes(`…${PHONE.slice(-4)}`), `the log shows the phone as …${PHONE.slice(-4)}`);
  });

  // Each dialect's own files, read as bytes: SQLite's main file and -wal while running and after shutdown;
  // PostgreSQL's relation files.
  if (onPostgres) {
    test('the PostgreSQL files of every table, index and TOAST table, read after a checkpoint, hold none of them', async () => {
      const files = await postgresRelationFiles();
      assert.ok(files.length >= 13, `${files.length} relation files`);
      const all = Buffer.concat(files.map(({ bytes }) => bytes));
      // The search sees the data: the checkpoint wrote it, and these are the service's files.
      assert.ok(all.includes(Buffer.from(USERNAME)), 'the username is in the files');
      assert.ok(all.includes(Buffer.from(PHONE)), 'the enrolled phone number is in the files');
      for (const { name, bytes } of files) {
        assert.deepEqual([...longSecretsIn(bytes), ...codesInDatabase(bytes.toString('latin1'))], [], `in ${name}`);
      }
    });
  } else {
    test('the SQLite files, read while the service runs, hold none of them', () => {
      const files = sqliteFiles(service.dbPath);
      assert.ok(files.includes(service.dbPath) && files.includes(`${service.dbPath}-wal`), `files: ${files}`);
      const all = Buffer.concat(files.map((file) => readFileSync(file)));
      // The search sees the data, deleted and replaced rows included.
      assert.ok(all.includes(Buffer.from(USERNAME)), 'the username is in the files');
      assert.ok(all.includes(Buffer.from(PHONE)), 'the enrolled phone number is in the files');
      for (const file of files) assert.deepEqual(secretsInDatabaseFile(file), [], `in ${basename(file)}`);
    });

    test('after shutdown the SQLite files still hold none of them', async () => {
      const links = mkdtempSync(join(tmpdir(), 'mfa-secrets-at-rest-'));
      linkDir = links;
      const linked = sqliteFiles(service.dbPath).map((file) => {
        const link = join(links, basename(file));
        linkSync(file, link);
        return link;
      });
      closed = true;
      await service.close();
      assert.ok(!existsSync(service.dbPath), 'close() removed the service directory');
      const main = readFileSync(join(links, basename(service.dbPath)));
      assert.ok(main.includes(Buffer.from(USERNAME)), 'the checkpointed file holds the data');
      for (const link of linked) {
        assert.deepEqual(secretsInDatabaseFile(link), [], `in ${basename(link)} after close`);
      }
    });
  }
});
