import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_TOKEN, expectStatus, type Service, startService } from '../support/service.js';
import { eventually } from '../support/webhook-receiver.js';

// The SSRF guard (CONTRACT §16) with its default: https only, public addresses only.
let service: Service;
before(async () => {
  service = await startService();
});
after(() => service.close());

function create(url: string) {
  return service.call('/admin/webhooks', { method: 'POST', token: ADMIN_TOKEN, body: { url } });
}

describe('webhook destinations', () => {
  test('http, loopback, private and link-local destinations are refused with a 400 that says why', async () => {
    const cases: [string, RegExp][] = [
      [
        'http://hooks.example.com/mfa',
        /expected an https URL.*only when the server runs with WEBHOOK_ALLOW_PRIVATE=true/,
      ],
      ['https://127.0.0.1/hook', /loopback/],
      ['https://127.8.9.10/hook', /loopback/],
      ['https://0x7f.1/hook', /loopback/],
      ['https://[::1]/hook', /loopback/],
      ['https://[::ffff:127.0.0.1]/hook', /loopback/],
      ['https://localhost/hook', /localhost is a loopback address/],
      ['https://10.1.2.3/hook', /private/],
      ['https://172.16.0.1/hook', /private/],
      ['https://192.168.1.1/hook', /private/],
      ['https://[fd00::1]/hook', /private/],
      ['https://169.254.169.254/latest/meta-data/', /link-local/],
      ['https://[fe80::1]/hook', /link-local/],
      ['https://0.0.0.0/hook', /reserved/],
      // IPv6 addresses that route to an IPv4 one: NAT64, local-use NAT64, IPv4-translated, 6to4.
      ['https://[64:ff9b::a00:1]/hook', /private/],
      ['https://[64:ff9b::a9fe:a9fe]/latest/meta-data/', /link-local/],
      ['https://[64:ff9b:1::c0a8:101]/hook', /private/],
      ['https://[::ffff:0:a00:1]/hook', /private/],
      ['https://[2002:a00:1::1]/hook', /private/],
      ['https://[2002:7f00:1::1]/hook', /loopback/],
      // IPv6 that is not global unicast: IPv4-compatible, site-local, discard, documentation, Teredo.
      ['https://[::127.0.0.1]/hook', /reserved/],
      ['https://[::8.8.8.8]/hook', /reserved/],
      ['https://[fec0::1]/hook', /reserved/],
      ['https://[100::1]/hook', /reserved/],
      ['https://[2001:db8::1]/hook', /reserved/],
      ['https://[2001::1]/hook', /reserved/],
      ['https://[3fff::1]/hook', /reserved/],
    ];
    // Every case is tried, and every one let through or refused for another reason is named.
    const wrong: string[] = [];
    for (const [url, reason] of cases) {
      const response = await create(url);
      const answer = (await response.json()) as { error?: string; error_description?: string };
      const isRight =
        response.status === 400 &&
        answer.error === 'webhook_url_refused' &&
        reason.test(answer.error_description ?? '');
      if (!isRight) wrong.push(`${url}: ${response.status} ${answer.error_description ?? ''}`);
    }
    assert.deepEqual(wrong, []);
    const listed = await expectStatus(service.call('/admin/webhooks', { token: ADMIN_TOKEN }), 200);
    assert.deepEqual(listed.webhooks, [], 'nothing was created');
  });

  test('WEBHOOK_ALLOW_PRIVATE=true lifts the rule: IPv6 outside global unicast is accepted then', async () => {
    const open = await startService({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    try {
      for (const host of ['::127.0.0.1', 'fec0::1', '100::1', '2001:db8::1', '2001::1', 'fd00::1']) {
        const url = `https://[${host}]/hook`;
        const created = await expectStatus(
          open.call('/admin/webhooks', { method: 'POST', token: ADMIN_TOKEN, body: { url } }),
          201,
        );
        assert.equal(created.url, new URL(url).href);
      }
    } finally {
      await open.close();
    }
  });

  test('a public https address is accepted, IPv4 or global unicast IPv6', async () => {
    for (const url of ['https://93.184.216.34/hooks/mfa', 'https://[2606:4700:4700::1111]/hooks/mfa']) {
      const created = await expectStatus(create(url), 201);
      assert.equal(created.url, url);
      await expectStatus(service.call(`/admin/webhooks/${created.id}`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
    }
  });

  test('the resolved address is checked again at send time: a host that now resolves to loopback is not called', async () => {
    const connections: number[] = [];
    const listener = createServer((socket) => {
      connections.push(Date.now());
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as { port: number }).port;
    try {
      // As if its DNS had changed since it was created (rebinding): the row holds a host that now
      // resolves to 127.0.0.1. The secret is stored unsealed, which the worker also reads.
      const id = randomUUID();
      await service.execute(
        sql`insert into webhook_endpoint (id, url, events, sealed_secret, created_at)
            values (${id}, ${`https://localhost:${port}/hook`}, ${'["mfa.reset_by_operator"]'},
                    ${'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'}, ${new Date().toISOString()})`,
      );
      const userId = await service.createUser('rebound', 'correct horse battery');
      await expectStatus(service.call(`/admin/users/${userId}/mfa`, { method: 'DELETE', token: ADMIN_TOKEN }), 204);
      let log: any[] = [];
      await eventually(async () => {
        log = (await expectStatus(service.call(`/admin/webhooks/${id}/deliveries`, { token: ADMIN_TOKEN }), 200))
          .deliveries;
        return log.some((line) => line.status === 'failed');
      });
      assert.deepEqual(
        log.filter((line) => line.attempted_at).map((line) => [line.attempt, line.status, line.response_status]),
        [[1, 'failed', null]],
      );
      assert.deepEqual(connections, [], 'no connection was made');
      assert.match(service.log(), /refused: localhost resolves to a loopback address/);
    } finally {
      listener.close();
    }
  });
});
