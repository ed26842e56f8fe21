import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { sql } from 'kysely';
import * as OTPAuth from 'otpauth';
import { type AdminRun, hasScript, runAdmin, runAdminInTerminal } from '../support/admin-cli.js';
import { createTestSchema, onPostgres } from '../support/postgres.js';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';
import { eventually, startWebhookReceiver, verifyWebhook } from '../support/webhook-receiver.js';

const PASSWORD = 'correct horse battery';
const COMMANDS = [
  'create-user',
  'set-password',
  'create-client',
  'show-client',
  'set-mfa-challenge',
  'reset-mfa',
  'delete-user',
  'list-users',
  'rotate-signing-key',
  'create-webhook',
  'list-webhooks',
  'delete-webhook',
  'webhook-deliveries',
  'sms-status',
  'sms-resume',
];

type Run = AdminRun;

let databaseUrl: string;
let service: Service;
const cleanups: (() => Promise<void> | void)[] = [];

before(async () => {
  if (onPostgres) {
    const schema = await createTestSchema();
    databaseUrl = schema.databaseUrl;
    cleanups.push(schema.drop);
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'mfa-admin-cli-'));
    databaseUrl = `sqlite:${join(dir, 'admin.sqlite')}`;
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  }
  // A server on the very database the commands change, to see their effect from outside.
  service = await startService({ env: { DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true' } });
});

after(async () => {
  await service.close();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Runs `admin <args>` on the test's database (see runAdmin). */
function admin(args: string[], options: Parameters<typeof runAdmin>[2] = {}) {
  return runAdmin(databaseUrl, args, options);
}

/** Asserts a clean refusal: the exit code, a message on stderr matching `message`, and no stack trace. */
function assertRefused(run: Run, code: number, message: RegExp) {
  assert.equal(run.code, code, `exit code; stderr: ${run.stderr}`);
  assert.match(run.stderr, message);
  assert.doesNotMatch(run.stderr, /\n\s+at .+:\d+:\d+/, 'a message, not a stack trace');
}

/** Parses `list-users` output into rows keyed by its header. */
function parseUserList(stdout: string): Record<string, string>[] {
  const [header = '', ...lines] = stdout.trimEnd().split('\n');
  const columns = header.split('\t');
  assert.deepEqual(columns, ['username', 'id', 'mfa', 'phone']);
  return lines.map((line) => Object.fromEntries(line.split('\t').map((cell, index) => [columns[index], cell])));
}

async function loginStatus(username: string, password: string): Promise<number> {
  const response = await service.login(username, password);
  await response.arrayBuffer();
  return response.status;
}

// Each run is a fresh node process loading the service's modules. Independent groups run side by
// side so the file stays quick.
describe('admin CLI', { concurrency: 4 }, () => {
  test('npm run admin -- --help lists every command and exits 0, without touching the database', async () => {
    // An unusable DATABASE_URL proves help needs no database.
    const run = await admin(['--help'], { viaNpm: true, env: { DATABASE_URL: 'mysql://nowhere' } });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^usage: npm run admin -- <command>/);
    for (const command of COMMANDS) assert.match(run.stdout, new RegExp(`^  ${command}\\b`, 'm'));
  });

  test('every command answers --help (or -h) with its usage and exits 0', async () => {
    const runs = await Promise.all(
      COMMANDS.map((command, index) =>
        admin([command, index % 2 === 0 ? '--help' : '-h'], { env: { DATABASE_URL: 'mysql://nowhere' } }),
      ),
    );
    for (const [index, run] of runs.entries()) {
      const command = COMMANDS[index] ?? '';
      assert.equal(run.code, 0, `${command}: ${run.stderr}`);
      assert.match(run.stdout, new RegExp(`^usage: npm run admin -- ${command}\\b`), command);
      assert.ok(run.stdout.split('\n').length >= 3, `${command} explains itself`);
    }
    assert.match(runs[0]?.stdout ?? '', /standard input/, 'create-user says where the password comes from');
  });

  test('create-user takes the password from the first line of standard input; the user then logs in through the server', async () => {
    const run = await admin(['create-user', 'cli-alice'], { stdin: `${PASSWORD}\r\nnot part of it\n` });
    assert.equal(run.code, 0, run.stderr);
    const id = /^created user cli-alice \(([0-9a-f-]{36})\)$/m.exec(run.stdout)?.[1];
    assert.ok(id, run.stdout);
    assert.ok(!`${run.stdout}${run.stderr}`.includes(PASSWORD), 'the password is not echoed');

    const tokens = await expectStatus(service.login('cli-alice', PASSWORD), 200);
    assert.equal(decodeJwt(tokens.access_token).sub, id);
    assert.equal(await loginStatus('cli-alice', 'wrong password'), 400);
    assert.equal(await loginStatus('cli-alice', `${PASSWORD}\r\nnot part of it`), 400);
  });

  test('create-user in a terminal asks for the password and does not show it as it is typed', {
    skip: hasScript ? false : 'needs script (util-linux) for a terminal',
  }, async () => {
    const run = await runAdminInTerminal(databaseUrl, ['create-user', 'cli-typed'], `${PASSWORD}x\u007f\r`);
    assert.equal(run.code, 0, run.stdout);
    assert.match(run.stdout, /^password \(not shown\): /);
    assert.match(run.stdout, /created user cli-typed \(/);
    assert.ok(!run.stdout.includes(PASSWORD), `the terminal showed the password: ${run.stdout}`);
    // Backspace took the x back.
    await expectStatus(service.login('cli-typed', PASSWORD), 200);
  });

  test('create-user refuses a password given as an argument or an option, even with one on standard input', async () => {
    const runs = await Promise.all([
      admin(['create-user', 'cli-argv', 'password-in-argv'], { stdin: `${PASSWORD}\n` }),
      admin(['create-user', '--password=password-in-argv', 'cli-argv'], { stdin: `${PASSWORD}\n` }),
    ]);
    for (const run of runs) {
      assertRefused(run, 2, /standard input/);
      assert.ok(!run.stderr.includes('password-in-argv'), 'the refused password is not echoed');
    }
    assert.ok(!(await service.dumpDatabase()).includes('cli-argv'), 'nobody was created');
  });

  test('create-user with a taken username or no password: exit 1 and a clear message, nothing changed', async () => {
    await service.createUser('cli-taken', PASSWORD);
    const [duplicate, missing] = await Promise.all([
      admin(['create-user', 'cli-taken'], { stdin: 'another password' }),
      admin(['create-user', 'cli-empty']),
    ]);
    assertRefused(duplicate, 1, /^error: .*exists/m);
    assertRefused(missing, 1, /^error: password must be 8 to 1024 characters/m);
    assert.equal(await loginStatus('cli-taken', PASSWORD), 200, 'the first user is unchanged');
    assert.equal(await loginStatus('cli-taken', 'another password'), 400);
    assert.ok(!(await service.dumpDatabase()).includes('cli-empty'), 'nobody was created');
  });

  test('set-password takes the new password from standard input, ends every login of the user, and refuses a weak one', async () => {
    const userId = await service.createUser('cli-setpw', PASSWORD);
    const before = await expectStatus(service.login('cli-setpw', PASSWORD), 200);
    const next = 'lantern orbit kettle whistle';
    const weak = await admin(['set-password', 'cli-setpw'], { stdin: 'letmein123\n' });
    assertRefused(weak, 1, /^error: this password is one of the most common ones/m);
    assert.ok(!weak.stderr.includes('letmein123'), 'the refused password is not echoed');
    assert.equal(await loginStatus('cli-setpw', PASSWORD), 200, 'a refused password changes nothing');

    const run = await admin(['set-password', 'cli-setpw'], { stdin: `${next}\nnot part of it\n` });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^password set for cli-setpw; every login of the user has ended$/m);
    assert.ok(!`${run.stdout}${run.stderr}`.includes(next), 'the password is not echoed');
    await expectStatus(service.call('/mfa/password/', { token: before.access_token }), 401);
    assert.equal(await loginStatus('cli-setpw', PASSWORD), 400);
    const after = await expectStatus(service.login('cli-setpw', next), 200);
    assert.equal(decodeJwt(after.access_token).sub, userId);

    const argv = await admin(['set-password', 'cli-setpw', 'password-in-argv'], { stdin: `${next}\n` });
    assertRefused(argv, 2, /standard input/);
    assertRefused(await admin(['set-password', 'cli-nobody'], { stdin: `${next}\n` }), 1, /^error: no user is called/m);
  });

  test('create-client prints its id and secret once; the client then authenticates, and the secret is stored only hashed', async () => {
    const run = await admin(['create-client', 'billing-api']);
    assert.equal(run.code, 0, run.stderr);
    const clientId = /^client_id=(\S+)$/m.exec(run.stdout)?.[1] ?? '';
    const clientSecret = /^client_secret=(\S+)$/m.exec(run.stdout)?.[1] ?? '';
    assert.ok(clientId && clientSecret.length >= 32, run.stdout);
    assert.equal(run.stdout.split(clientSecret).length, 2, 'printed once');

    await service.createUser('cli-client-user', PASSWORD);
    const basic = (secret: string) => `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`;
    const tokens = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { authorization: basic(clientSecret) },
        body: { grant_type: 'password', username: 'cli-client-user', password: PASSWORD },
      }),
      200,
    );
    assert.equal(decodeJwt(tokens.access_token).client_id, clientId);
    const introspected = await expectStatus(
      service.call('/mfa/oauth2/introspect/', {
        method: 'POST',
        headers: { authorization: basic(clientSecret) },
        body: { token: tokens.access_token },
      }),
      200,
    );
    assert.equal(introspected.active, true);
    assert.equal(introspected.client_id, clientId);
    const wrong = await expectStatus(
      service.call('/mfa/oauth2/introspect/', {
        method: 'POST',
        headers: { authorization: basic(`${clientSecret}x`) },
        body: { token: tokens.access_token },
      }),
      401,
    );
    assert.equal(wrong.error, 'invalid_client');

    // show-client and set-mfa-challenge: the seed's answer by default, the 403 challenge once set.
    assert.match((await admin(['show-client', clientId])).stdout, /^mfa_challenge=seed$/m);
    const set = await admin(['set-mfa-challenge', clientId, 'error']);
    assert.equal(set.code, 0, set.stderr);
    assert.match((await admin(['show-client', clientId])).stdout, /^name=billing-api\nmfa_challenge=error$/m);
    const phone = nextPhone();
    await service.createUserWithMfa('cli-error-client-user', PASSWORD, phone);
    const refused = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        headers: { authorization: basic(clientSecret) },
        body: { grant_type: 'password', username: 'cli-error-client-user', password: PASSWORD },
      }),
      403,
    );
    assert.equal(refused.error, 'mfa_required');
    const bad = await admin(['set-mfa-challenge', clientId, 'loud']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /expected one of seed, error/);
    assert.ok(!(await service.dumpDatabase()).includes(clientSecret), 'the database never holds the secret');
  });

  test('list-users goes through more users than a page holds (1 000), in username order, any case', async () => {
    // Rows made by the database itself: hashing 1 200 passwords would take a minute.
    await service.execute(sql`
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 1200)
      insert into "user" (id, username, username_key, password_hash, created_at)
      select 'bulk-' || i, 'Bulk-' || substr(cast(10000 + i as text), 2), 'bulk-' || substr(cast(10000 + i as text), 2), 'x', '2026-11-27T00:00:00.000Z'
      from n`);
    const listed = await admin(['list-users']);
    assert.equal(listed.code, 0, listed.stderr);
    const bulk = parseUserList(listed.stdout)
      .map((row) => row.username)
      .filter((name) => name?.startsWith('Bulk-'));
    assert.equal(bulk.length, 1200);
    assert.deepEqual(bulk.slice(998, 1002), ['Bulk-0999', 'Bulk-1000', 'Bulk-1001', 'Bulk-1002']);
    await service.execute(sql`delete from "user" where id like 'bulk-%'`);
  });

  test('create-webhook prints its id and secret once; the server signs with that secret; list, deliveries, delete', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const url = `${receiver.url}/cli`;
      const local = { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } };
      assertRefused(await admin(['create-webhook', url]), 1, /^error: url: expected an https URL/m);
      assertRefused(
        await admin(['create-webhook', 'https://127.0.0.1/cli']),
        1,
        /^error: url: 127\.0\.0\.1 is a loopback/m,
      );
      assertRefused(
        await admin(['create-webhook', url, 'mfa.everything'], local),
        1,
        /unknown event "mfa\.everything"/,
      );
      assertRefused(await admin(['create-webhook', url, 'mfa.enabled', 'extra'], local), 2, /takes 1 or 2 arguments/);

      const created = await admin(['create-webhook', url, 'mfa.reset_by_operator,mfa.enabled'], local);
      assert.equal(created.code, 0, created.stderr);
      const id = /^id=(\S+)$/m.exec(created.stdout)?.[1] ?? '';
      const secret = /^secret=(whsec_\S+)$/m.exec(created.stdout)?.[1] ?? '';
      assert.ok(id && secret, created.stdout);
      const listed = await admin(['list-webhooks']);
      assert.match(listed.stdout, new RegExp(`^${id}\t${url}\tmfa\\.reset_by_operator,mfa\\.enabled$`, 'm'));

      const userId = await service.createUser('cli-hooked', PASSWORD);
      assert.equal((await admin(['reset-mfa', 'cli-hooked'])).code, 0);
      let webhookId = '';
      await eventually(() => {
        const mine = receiver.at('/cli').find((webhook) => verifyWebhook(secret, webhook).data.user_id === userId);
        webhookId = mine?.headers['webhook-id'] ?? '';
        return mine !== undefined;
      });
      await eventually(async () => {
        const log = await admin(['webhook-deliveries', id]);
        return new RegExp(`^${webhookId}\tmfa\\.reset_by_operator\t1\tsucceeded\t204\t`, 'm').test(log.stdout);
      });

      assert.match((await admin(['delete-webhook', id])).stdout, /deleted webhook/);
      assertRefused(await admin(['delete-webhook', id]), 1, /no webhook endpoint has this id/);
    } finally {
      await receiver.close();
    }
  });

  test('rotate-signing-key makes a new key active: published in the JWKS at once, and the kid of new tokens', async () => {
    await service.createUser('cli-rotation', PASSWORD);
    const oldToken = await service.accessToken('cli-rotation', PASSWORD);
    const oldKid = decodeProtectedHeader(oldToken).kid;

    const run = await admin(['rotate-signing-key']);
    assert.equal(run.code, 0, run.stderr);
    const newKid = /^new signing key (\S+)$/m.exec(run.stdout)?.[1];
    assert.ok(newKid, run.stdout);
    assert.notEqual(newKid, oldKid);

    const jwks = await expectStatus(service.call('/.well-known/jwks.json'), 200);
    const kids = jwks.keys.map((key: { kid: string }) => key.kid);
    assert.ok(kids.includes(newKid), 'the new key is published');
    assert.ok(kids.includes(oldKid), 'the old key stays published while its tokens live');
    for (const key of jwks.keys) assert.equal(key.d, undefined, 'public keys only');

    // A running node looks for a newer key at most every 10 s.
    service.clock.advance(11);
    const newToken = await service.accessToken('cli-rotation', PASSWORD);
    assert.equal(decodeProtectedHeader(newToken).kid, newKid);
    await expectStatus(service.call('/mfa/', { token: newToken }), 200);
    await expectStatus(service.call('/mfa/', { token: oldToken }), 200);
  });

  test('unknown command, no command, missing argument, unknown option: exit 2 with the usage', async () => {
    const [unknown, none, noName, noUsername, option] = await Promise.all([
      admin(['frobnicate']),
      admin([]),
      admin(['create-client']),
      admin(['reset-mfa']),
      admin(['list-users', '--all']),
    ]);
    assertRefused(unknown, 2, /unknown command "frobnicate"/);
    assert.match(unknown.stderr, /usage: npm run admin -- <command>/);
    assert.equal(none.code, 2);
    assert.match(`${none.stdout}${none.stderr}`, /usage: npm run admin -- <command>/);
    assertRefused(noName, 2, /usage: npm run admin -- create-client <name>/);
    assertRefused(noUsername, 2, /usage: npm run admin -- reset-mfa <username>/);
    assertRefused(option, 2, /unknown option --all/);
  });

  test('an unknown user or a bad DATABASE_URL: exit 1 and one clear line', async () => {
    const [unknown, badDatabase] = await Promise.all([
      admin(['reset-mfa', 'cli-nobody']),
      admin(['list-users'], { env: { DATABASE_URL: 'mysql://nowhere' } }),
    ]);
    assertRefused(unknown, 1, /^error: no user is called "cli-nobody"/m);
    assertRefused(badDatabase, 1, /DATABASE_URL/);
    for (const run of [unknown, badDatabase]) assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
  });
});

// Apart from the group above, which runs side by side: its tests move the shared clock (a login with
// an SMS code, a signing key's refresh), and an authenticator app's code is judged by that clock.
describe('admin CLI and a user’s second factors', () => {
  test('list-users shows each user’s MFA state, the phone masked; reset-mfa turns MFA off', async () => {
    const phone = nextPhone();
    const { userId } = await service.createUserWithMfa('cli-phone-lost', PASSWORD, phone);
    await service.createUser('cli-no-mfa', PASSWORD);
    assert.deepEqual(await expectStatus(service.login('cli-phone-lost', PASSWORD), 200), {
      mfa_required: true,
      mfa_type: 'sms',
    });

    const listed = await admin(['list-users']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(!listed.stdout.includes(phone), 'the full number is not shown');
    const rows = parseUserList(listed.stdout);
    assert.deepEqual(
      rows.find((row) => row.username === 'cli-phone-lost'),
      { username: 'cli-phone-lost', id: userId, mfa: 'sms', phone: `…${phone.slice(-4)}` },
    );
    assert.equal(rows.find((row) => row.username === 'cli-no-mfa')?.mfa, 'off');
    // Several factors: their types, in the order they were added.
    const strong = await service.accessToken('cli-phone-lost', PASSWORD, {
      mfa_code: service.twilio.lastCodeFor(`+${phone}`),
    });
    const start = await expectStatus(
      service.call('/mfa/totp/request/', { method: 'PUT', token: strong, body: {} }),
      200,
    );
    const app = OTPAuth.URI.parse(start.otpauth_uri);
    const code = app.generate({ timestamp: service.clock.now().getTime() });
    await expectStatus(
      service.call('/mfa/totp/verify/', { method: 'PUT', token: strong, body: { mfa_code: code } }),
      200,
    );
    const both = parseUserList((await admin(['list-users'])).stdout);
    assert.equal(both.find((row) => row.username === 'cli-phone-lost')?.mfa, 'sms,totp');
    service.clock.advance(30);
    const thiefToken = await service.accessToken('cli-phone-lost', PASSWORD, {
      mfa_code: app.generate({ timestamp: service.clock.now().getTime() }),
    });

    const reset = await admin(['reset-mfa', 'cli-phone-lost']);
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /MFA reset for cli-phone-lost/);
    // Every login made before the reset ends: a thief holding the phone's login is out too.
    await expectStatus(service.call('/mfa/', { token: thiefToken }), 401);

    // The password alone now gives tokens; status, phone and backup codes are gone.
    const tokens = await expectStatus(service.login('cli-phone-lost', PASSWORD), 200);
    assert.deepEqual(decodeJwt(tokens.access_token).amr, ['pwd']);
    assert.deepEqual(await expectStatus(service.call('/mfa/', { token: tokens.access_token }), 200), {
      enabled: false,
      challenge_type: '',
      phone_number: '',
    });
  });
});
