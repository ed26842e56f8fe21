// The operators' console over HTTP (CONTRACT §21): its page, its built-in client signing in with an
// unmodified standard client (openid-client), and each admin call the console makes that the
// operators' tests do not: a user's details, email search, ending a user's sessions, the SMS
// countries and their resume. The console itself is tested in Chromium (test/browser/console.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ensureBuilt } from '../support/browser.js';
import { addSmsSends, grantOperator, pauseCountry } from '../support/console.js';
import {
  authorizationRequest,
  configOf,
  createTotpUser,
  exchange,
  PASSWORD,
  type Provider,
  startProvider,
} from '../support/openid-flow.js';
import { ADMIN_TOKEN, expectStatus, type Service } from '../support/service.js';
import { SignInBrowser } from '../support/sign-in-browser.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

let provider: Provider;
let service: Service;

before(async () => {
  ensureBuilt();
  provider = await startProvider({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  service = provider.service;
});
after(() => provider.close());

const admin = (path: string, init: { method?: string; token?: string; body?: unknown } = {}) =>
  service.call(`/admin/${path}`, { token: ADMIN_TOKEN, ...init });

/** The operator's events of type operator_action, newest first. */
async function operatorActions(operatorId: string): Promise<{ detail: Record<string, string> }[]> {
  const { events } = await expectStatus(admin(`users/${operatorId}/events`), 200);
  return events.filter((event: { type: string }) => event.type === 'operator_action');
}

describe('the console’s page and client (CONTRACT §21)', () => {
  test('GET /admin/console/ is the built page under the pages’ CSP; /admin/console is sent there', async () => {
    const page = await service.call('/admin/console/');
    assert.equal(page.status, 200);
    assert.match(
      page.headers.get('content-security-policy') ?? '',
      /default-src 'self'.*require-trusted-types-for 'script'/,
    );
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    const html = await page.text();
    assert.match(html, /<title[^>]*>Operators’ console<\/title>/);
    const script = /src="(assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    assert.ok(script, 'the page names its script');
    const asset = await service.call(`/admin/console/${script}`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control') ?? '', /immutable/);

    const bare = await fetch(`${service.url}/admin/console`, { redirect: 'manual' });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get('location'), 'console/');
  });

  test('its client is built in: public, its id and only redirect the console’s address, openid alone', async () => {
    const consoleUrl = `${provider.issuer}/admin/console/`;
    const client = await expectStatus(admin(`clients/${encodeURIComponent(consoleUrl)}`), 200);
    assert.deepEqual(
      {
        name: client.name,
        token_endpoint_auth_method: client.token_endpoint_auth_method,
        redirect_uris: client.redirect_uris,
        post_logout_redirect_uris: client.post_logout_redirect_uris,
        allowed_scopes: client.allowed_scopes,
      },
      {
        name: 'Operators’ console',
        token_endpoint_auth_method: 'none',
        redirect_uris: [consoleUrl],
        post_logout_redirect_uris: [consoleUrl],
        allowed_scopes: 'openid',
      },
    );
  });

  test('an operator signs in through it with openid-client (PKCE, no secret) and the token reads the admin API', async () => {
    const olga = await createTotpUser(service, 'console-olga');
    await grantOperator(service, 'console-olga');
    const consoleUrl = `${provider.issuer}/admin/console/`;
    const config = await configOf(provider.issuer, { client_id: consoleUrl });
    const request = await authorizationRequest(config, { redirect_uri: consoleUrl, scope: 'openid' });
    const signIn = await new SignInBrowser(provider.issuer).startSignIn(request.url);
    assert.equal(signIn.opened.client_name, 'Operators’ console');
    await signIn.password('console-olga', PASSWORD);
    const done = await signIn.secondFactor({ mfa_code: olga.code() });
    assert.ok(String(done.location).startsWith(`${consoleUrl}?`), done.location);
    const tokens = await exchange(config, done.location, request);
    assert.equal(tokens.claims()?.acr, 'aal2');
    const found = await expectStatus(
      service.call('/admin/users/search?q=console-olga', { token: tokens.access_token }),
      200,
    );
    assert.deepEqual(
      found.users.map((user: { id: string }) => user.id),
      [olga.userId],
    );
  });
});

describe('what the console reads and changes, for scripts too (CONTRACT §21)', () => {
  let operator: { userId: string; token: () => Promise<string> };

  before(async () => {
    const user = await createTotpUser(service, 'ops-oscar');
    await grantOperator(service, 'ops-oscar');
    operator = {
      userId: user.userId,
      token: () => service.accessToken('ops-oscar', PASSWORD, { mfa_code: user.code() }),
    };
  });

  test('GET /admin/users/:id: the user, their verified factors, live sessions and remembered devices', async () => {
    const ulla = await createTotpUser(service, 'ulla');
    await expectStatus(
      service.call('/admin/users', {
        method: 'POST',
        token: ADMIN_TOKEN,
        body: { username: 'ulla-mail', password: PASSWORD, email: 'Ulla@Example.com' },
      }),
      201,
    );
    await service.accessToken('ulla', PASSWORD, { mfa_code: ulla.code() });
    // An enrolment started and not finished is no factor yet.
    const token = await service.accessToken('ulla', PASSWORD, { mfa_code: ulla.code() });
    await expectStatus(service.call('/mfa/totp/request/', { method: 'PUT', token, body: {} }), 200);

    const user = await expectStatus(admin(`users/${ulla.userId}`, { token: await operator.token() }), 200);
    assert.equal(user.username, 'ulla');
    assert.equal(user.mfa_enabled, true);
    assert.equal(user.is_operator, false);
    assert.deepEqual(
      user.factors.map((factor: { type: string; is_default: boolean }) => [factor.type, factor.is_default]),
      [['totp', true]],
    );
    // The latest first: two logins with the app, and the password-only one that added the app.
    assert.deepEqual(
      user.sessions.map((session: { amr: string[]; acr: string }) => [session.amr.join(' '), session.acr]),
      [
        ['pwd otp', 'aal2'],
        ['pwd otp', 'aal2'],
        ['pwd', 'aal1'],
      ],
    );
    for (const session of user.sessions) {
      assert.equal(session.client_id, 'public');
      assert.equal(session.client_name, null);
      assert.equal(session.browser_sign_in, false);
    }
    assert.deepEqual(user.remembered_devices, []);

    const refused = await expectStatus(admin('users/no-such-user'), 404);
    assert.equal(refused.error, 'not_found');
  });

  test('users found by the start of their email address, any case, a page at a time', async () => {
    for (const name of ['mail-b', 'mail-a', 'mail-c']) {
      await expectStatus(
        admin('users', { method: 'POST', body: { username: name, password: PASSWORD, email: `${name}@Example.org` } }),
        201,
      );
    }
    const first = await expectStatus(admin('users/search?q=MAIL-&limit=2'), 200);
    assert.deepEqual(
      first.users.map((user: { username: string }) => user.username),
      ['mail-a', 'mail-b'],
    );
    const byEmail = await expectStatus(admin('users/search?q=MAIL-A%40&limit=2'), 200);
    assert.deepEqual(
      byEmail.users.map((user: { username: string; email: string }) => [user.username, user.email]),
      [['mail-a', 'mail-a@Example.org']],
    );
    const domain = await expectStatus(admin('users/search?q=mail-%40&limit=2'), 200);
    assert.deepEqual(domain.users, [], 'the start of the address, not any part');
    const page = await expectStatus(admin('users/search?q=m%40&limit=2'), 200);
    assert.deepEqual(page.users, []);
    const all = await expectStatus(admin('users/search?q=mail-&limit=2'), 200);
    const next = await expectStatus(admin(`users/search?q=mail-c%40&after=${encodeURIComponent(all.next_after)}`), 200);
    assert.deepEqual(
      next.users.map((user: { username: string }) => user.username),
      ['mail-c'],
    );
  });

  test('DELETE /admin/users/:id/sessions ends every login of the user, keeps their factors, and is audited', async () => {
    const vera = await createTotpUser(service, 'vera');
    const login = await expectStatus(service.login('vera', PASSWORD, { mfa_code: vera.code() }), 200);
    const token = await operator.token();
    await expectStatus(admin(`users/${vera.userId}/sessions`, { method: 'DELETE', token }), 204);

    const refreshed = await expectStatus(
      service.call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'refresh_token', refresh_token: login.refresh_token },
      }),
      400,
    );
    assert.equal(refreshed.error, 'invalid_grant');
    await expectStatus(service.call('/mfa/', { token: login.access_token }), 401);
    const user = await expectStatus(admin(`users/${vera.userId}`), 200);
    assert.deepEqual(user.sessions, []);
    assert.equal(user.factors.length, 1, 'the factors stay');
    const { events } = await expectStatus(admin(`users/${vera.userId}/events`), 200);
    assert.equal(events[0].type, 'logout');
    assert.equal(events[0].outcome, 'ended_by_operator');
    const [action] = await operatorActions(operator.userId);
    assert.deepEqual(action?.detail, {
      operator_id: operator.userId,
      action: 'DELETE /admin/users/:id/sessions',
      target_id: vera.userId,
    });

    assert.equal(
      (await expectStatus(admin('users/no-such-user/sessions', { method: 'DELETE' }), 404)).error,
      'not_found',
    );
  });

  test('POST /admin/users/:id/unlock lifts the block of wrong passwords, which GET /admin/users/:id shows', async () => {
    const wanda = await service.createUser('wanda', PASSWORD);
    for (let attempt = 0; attempt < 5; attempt += 1)
      await expectStatus(service.login('wanda', 'not her password'), 400);
    const blocked = await expectStatus(service.login('wanda', PASSWORD), 429);
    assert.equal(blocked.error, 'login_throttled');
    const locked = await expectStatus(admin(`users/${wanda}`), 200);
    assert.ok(Date.parse(locked.locked_until) > service.clock.now().getTime(), locked.locked_until);

    const token = await operator.token();
    await expectStatus(admin(`users/${wanda}/unlock`, { method: 'POST', token }), 204);
    assert.equal((await expectStatus(admin(`users/${wanda}`), 200)).locked_until, null);
    await expectStatus(service.login('wanda', PASSWORD), 200);
    const [action] = await operatorActions(operator.userId);
    assert.equal(action?.detail.action, 'POST /admin/users/:id/unlock');
    assert.equal((await expectStatus(admin('users/no-such-user/unlock', { method: 'POST' }), 404)).error, 'not_found');
  });

  test('GET /admin/signing-keys: every key, newest first, what it does; after a rotation the old ones stay published', async () => {
    const before = await expectStatus(admin('signing-keys', { token: await operator.token() }), 200);
    type Key = { kid: string; alg: string; state: string };
    const algs = (keys: Key[]) => keys.map((key) => key.alg).sort();
    const active = (keys: Key[]) => keys.filter((key) => key.state === 'active');
    assert.deepEqual(algs(active(before.keys)), ['ES256', 'EdDSA', 'RS256']);
    const { kid } = await expectStatus(admin('signing-keys', { method: 'POST', token: await operator.token() }), 201);
    const after = await expectStatus(admin('signing-keys'), 200);
    assert.equal(after.keys[0].kid, kid, 'newest first');
    assert.deepEqual(algs(active(after.keys)), ['ES256', 'EdDSA', 'RS256']);
    for (const old of active(before.keys)) {
      assert.equal(after.keys.find((key: Key) => key.kid === old.kid).state, 'published');
    }
    for (const key of after.keys) assert.deepEqual(Object.keys(key).sort(), ['alg', 'created_at', 'kid', 'state']);
  });

  test('POST /admin/webhooks/:id/deliveries/:event_id/redeliver sends a done delivery again, as it was; 409 while pending', async () => {
    const receiver = await startWebhookReceiver();
    // The second request (the redelivery) hangs: the delivery is being attempted meanwhile.
    receiver.answerWith((_webhook, count) => (count === 2 ? 'hang' : 204));
    try {
      const endpoint = await expectStatus(
        admin('webhooks', { method: 'POST', body: { url: `${receiver.url}/ops`, events: ['operator.action'] } }),
        201,
      );
      const someone = await service.createUser('redelivered', PASSWORD);
      const token = await operator.token();
      await expectStatus(admin(`users/${someone}/unlock`, { method: 'POST', token }), 204);
      const [first] = await receiver.waitFor('/ops', 1);
      const deliveries = async () =>
        (await expectStatus(admin(`webhooks/${endpoint.id}/deliveries`), 200)).deliveries as {
          event_id: string;
          status: string;
        }[];
      await eventually(async () => (await deliveries())[0]?.status === 'succeeded');
      const [done] = await deliveries();
      assert.equal(done?.event_id, first?.headers['webhook-id']);

      const path = `webhooks/${endpoint.id}/deliveries/${done?.event_id}/redeliver`;
      await expectStatus(admin(path, { method: 'POST', token }), 204);
      const [, again] = await receiver.waitFor('/ops', 2);
      assert.equal(again?.headers['webhook-id'], first?.headers['webhook-id']);
      assert.equal(again?.body, first?.body);
      const pending = await expectStatus(admin(path, { method: 'POST', token }), 409);
      assert.equal(pending.error, 'delivery_pending');
      const unknown = await expectStatus(
        admin(`webhooks/${endpoint.id}/deliveries/no-such-event/redeliver`, { method: 'POST' }),
        404,
      );
      assert.equal(unknown.error, 'not_found');
      await expectStatus(admin(`webhooks/${endpoint.id}`, { method: 'DELETE' }), 204);
    } finally {
      await receiver.close();
    }
  });

  test('GET /admin/sms/countries and POST …/:country/resume: a paused country sends again; resuming twice is 409', async () => {
    await addSmsSends(service, 'FR', 2, 30);
    await addSmsSends(service, 'FR', 0, 90);
    await pauseCountry(service, 'FR');
    const before = await expectStatus(admin('sms/countries'), 200);
    const fr = before.countries.find((row: { country: string }) => row.country === 'FR');
    assert.equal(fr.sent_this_hour, 90);
    assert.ok(fr.paused_until, 'paused');
    assert.equal(fr.resumed_at, null);

    const token = await operator.token();
    await expectStatus(admin('sms/countries/FR/resume', { method: 'POST', token }), 204);
    const after = await expectStatus(admin('sms/countries'), 200);
    const resumed = after.countries.find((row: { country: string }) => row.country === 'FR');
    assert.equal(resumed.paused_until, null);
    assert.ok(resumed.resumed_at, 'resumed');
    const [action] = await operatorActions(operator.userId);
    assert.equal(action?.detail.target_id, 'FR');

    const twice = await expectStatus(admin('sms/countries/FR/resume', { method: 'POST', token }), 409);
    assert.equal(twice.error, 'country_not_paused');
    assert.match(twice.error_description, /GET \/admin\/sms\/countries/);
    const lower = await expectStatus(admin('sms/countries/fr/resume', { method: 'POST' }), 400);
    assert.match(lower.error_description, /country code in capitals/);
  });
});
