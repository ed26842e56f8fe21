import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import {
  authorizationRequest,
  configOf,
  createTotpUser,
  exchange,
  PASSWORD,
  registerClient,
  signInWithPassword,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';
import { eventually } from '../support/webhook-receiver.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** Each table the clean-up prunes: the column its seeded rows are named by. */
const KEYS = {
  refresh_token: 'id',
  sign_in_session: 'id',
  remembered_device: 'id',
  mfa_token: 'token_hash',
  authorization_code: 'code_hash',
  invite: 'token_hash',
  passkey_sign_in_challenge: 'challenge_hash',
  login_throttle: 'scope',
  sms_counter: 'scope',
} as const;
type Table = keyof typeof KEYS;

/**
 * Rows of every kind the hourly clean-up deletes, as of `now`: `dead-…` ones it must delete, past
 * their end (1 234 refresh tokens: three batches), and `live-…` ones it must keep.
 */
async function seed(service: Service, now: number, userId: string, clientId: string) {
  const at = (ms: number) => new Date(ms).toISOString();
  const past = at(now - 3 * DAY_MS);
  const future = at(now + 30 * DAY_MS);
  const refreshTokens = Array.from({ length: 1234 }, (_, index) => {
    const id = index === 0 ? 'dead-refresh_token' : `dead-refresh_token-${index}`;
    return sql`(${id}, ${`hash-${id}`}, 'family', ${userId}, ${clientId}, 'openid', 'pwd', 0, ${at(now - 3 * DAY_MS + index)}, ${past})`;
  });
  await service.execute(
    sql`insert into refresh_token (id, token_hash, family_id, user_id, client_id, scope, amr, auth_time, expires_at, created_at)
        values ${sql.join(refreshTokens)},
        ('live-refresh_token', 'hash-live', 'family', ${userId}, ${clientId}, 'openid', 'pwd', 0, ${future}, ${past})`,
  );
  for (const [name, expiresAt] of [
    ['dead', past],
    ['live', future],
  ] as const) {
    await service.execute(
      sql`insert into sign_in_session (id, secret_hash, user_id, amr, auth_time, session_generation, created_at, last_used_at, expires_at)
          values (${`${name}-sign_in_session`}, ${`secret-${name}`}, ${userId}, 'pwd', 0, 0, ${past}, ${past}, ${expiresAt})`,
    );
    await service.execute(
      sql`insert into remembered_device (id, token_hash, user_id, session_generation, amr, browser, created_at, last_used_at, expires_at)
          values (${`${name}-remembered_device`}, ${`device-${name}`}, ${userId}, 0, 'pwd', 'Firefox', ${past}, ${past}, ${expiresAt})`,
    );
    await service.execute(
      sql`insert into mfa_token (token_hash, user_id, client_id, required_acr, scope, expires_at, created_at)
          values (${`${name}-mfa_token`}, ${userId}, ${clientId}, 'aal2', 'openid', ${expiresAt}, ${past})`,
    );
    await service.execute(
      sql`insert into authorization_code (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, amr, auth_time,
            sign_in_session_id, login_id, session_generation, created_at, expires_at)
          values (${`${name}-authorization_code`}, ${clientId}, ${userId}, 'https://app.example.com/callback', 'c', 'openid',
            'pwd', 0, 's', 'l', 0, ${past}, ${expiresAt})`,
    );
    await service.execute(
      sql`insert into invite (token_hash, user_id, expires_at, created_at) values (${`${name}-invite`}, ${userId}, ${expiresAt}, ${past})`,
    );
    await service.execute(
      sql`insert into passkey_sign_in_challenge (challenge_hash, expires_at, created_at)
          values (${`${name}-passkey_sign_in_challenge`}, ${expiresAt}, ${past})`,
    );
  }
  // The throttle forgets a scope two days after its last failure.
  await service.execute(
    sql`insert into login_throttle (scope, failures, last_failure_at)
        values ('dead-login_throttle', 3, ${past}), ('live-login_throttle', 3, ${at(now)})`,
  );
  // SMS counters: an earlier hour's cap is read no more, but a country's counters are, for a week.
  await service.execute(
    sql`insert into sms_counter (scope, window_start, sends)
        values ('dead-sms_counter', ${at(now - 3 * HOUR_MS)}, 1),
               ('country:dead-sms_counter', ${at(now - 8 * DAY_MS)}, 1),
               ('country:live-sms_counter', ${at(now - 3 * DAY_MS)}, 1),
               ('live-sms_counter', ${at(now + 3 * HOUR_MS)}, 1)`,
  );
}

/** The seeded rows still there, by table: the names of the ones with `prefix` (`dead` or `live`). */
async function seeded(service: Service, prefix: 'dead' | 'live'): Promise<Record<Table, number>> {
  const counts = {} as Record<Table, number>;
  for (const [table, key] of Object.entries(KEYS) as [Table, string][]) {
    const rows = await service.execute<{ n: number | string }>(
      sql`select count(*) as n from ${sql.table(table)} where ${sql.ref(key)} like ${`${prefix}-%`} or ${sql.ref(key)} like ${`country:${prefix}-%`}`,
    );
    counts[table] = Number(rows[0]?.n);
  }
  return counts;
}

test('the expired rows of every kind are deleted by the hourly clean-up, in batches, not by the requests that used to', async () => {
  // Asked once an hour of real time: only each node's check at its start runs during the test.
  const provider = await startProvider({ retentionCheckEveryMs: 3_600_000 });
  const { service, issuer } = provider;
  const stopNodes: (() => Promise<void>)[] = [];
  try {
    const claims = () =>
      service.execute<{ name: string; due_at: string }>(
        sql`select name, due_at from scheduled_job where name = 'expired_rows'`,
      );
    await eventually(async () => (await claims()).length === 1);
    const userId = await service.createUser('keeper', PASSWORD);
    const registered = await registerClient(service);
    await seed(service, service.clock.now().getTime(), userId, registered.client_id);
    const dead = await seeded(service, 'dead');
    assert.deepEqual(dead, {
      refresh_token: 1234,
      sign_in_session: 1,
      remembered_device: 1,
      mfa_token: 1,
      authorization_code: 1,
      invite: 1,
      passkey_sign_in_challenge: 1,
      login_throttle: 1,
      sms_counter: 2,
    });
    const live = await seeded(service, 'live');

    // Two hours on: the job is due, and each domain's hourly check would have fired on its next call.
    service.clock.advance(2 * 3600);
    // The requests that pruned inside them: a login (refresh tokens, the throttle), a failed one,
    // a login asking for a second factor (MFA tokens), a hosted sign-in (a sign-in session, an
    // authorization code), an invite.
    await expectStatus(service.login('keeper', PASSWORD), 200);
    await expectStatus(service.login('keeper', 'not the password'), 400);
    await createTotpUser(service, 'second-factor');
    const strict = await registerClient(service, { mfa_challenge: 'error', token_endpoint_auth_method: 'none' });
    const challenged = await expectStatus(
      service.login('second-factor', PASSWORD, { client_id: strict.client_id }),
      403,
    );
    assert.ok(challenged.mfa_token, 'a second factor is asked for');
    const config = await configOf(issuer, registered);
    const request = await authorizationRequest(config);
    const back = await signInWithPassword(new SignInBrowser(issuer), request.url, 'keeper');
    await exchange(config, back, request);
    await expectStatus(service.call(`/admin/users/${userId}/invite`, { method: 'POST', token: ADMIN_TOKEN }), 201);
    assert.deepEqual(await seeded(service, 'dead'), dead, 'the requests deleted nothing');

    // Another node starts: its first check finds the job due (by the clock) and claims it.
    stopNodes.push(await service.startAnotherNode());
    await eventually(() => service.log().includes('expired rows clean-up done'));
    assert.deepEqual(
      await seeded(service, 'dead'),
      Object.fromEntries(Object.keys(KEYS).map((table) => [table, 0])),
      'every expired row is deleted',
    );
    assert.deepEqual(await seeded(service, 'live'), live, 'every live row is kept');
    const done = service
      .log()
      .split('\n')
      .filter((line) => line.includes('expired rows clean-up done'))
      .map((line) => JSON.parse(line));
    assert.equal(done.length, 1, 'one node ran it');
    assert.equal(done[0].refresh_tokens, 1234, 'past one batch');
    assert.equal(done[0].sms_counters, 2);
    assert.ok(((await claims())[0]?.due_at ?? '') > service.clock.now().toISOString(), 'claimed again an hour on');
    // The service still works after: the last login is not among what went.
    await expectStatus(service.login('keeper', PASSWORD), 200);
  } finally {
    await Promise.all(stopNodes.map((stop) => stop()));
    await provider.close();
  }
});
