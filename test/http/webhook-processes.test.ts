import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { type ServiceProcess, startServiceProcess } from '../support/node-process.js';
import { onPostgres } from '../support/postgres.js';
import { ADMIN_TOKEN, expectStatus } from '../support/service.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

// The service as `npm start` runs it, stopped in the middle of a delivery. These processes run on
// SQLite files whatever the pass: once, in the SQLite pass, is enough.
const skip = onPostgres && 'starts processes on SQLite: runs in the SQLite pass';

let receiver: WebhookReceiver;
let dir: string;
const running = new Set<ServiceProcess>();
before(async () => {
  receiver = await startWebhookReceiver();
  dir = mkdtempSync(join(tmpdir(), 'mfa-webhook-process-'));
});
after(async () => {
  for (const node of running) await node.stop('SIGKILL');
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(databasePath: string) {
  const node = await startServiceProcess({
    DATABASE_URL: `sqlite:${databasePath}`,
    ADMIN_TOKEN,
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  running.add(node);
  return node;
}

function call(node: ServiceProcess, path: string, method = 'GET', body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(node.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** An endpoint on the receiver whose first request hangs, and an mfa.reset_by_operator event for it. */
async function deliveryInFlight(node: ServiceProcess, path: string) {
  receiver.answerWith((webhook, count) => (webhook.path === path && count === 1 ? 'hang' : 204));
  const endpoint = await expectStatus(
    call(node, '/admin/webhooks', 'POST', { url: receiver.url + path, events: ['mfa.reset_by_operator'] }),
    201,
  );
  const user = await expectStatus(
    call(node, '/admin/users', 'POST', { username: path.slice(1), password: 'correct horse battery' }),
    201,
  );
  await expectStatus(call(node, `/admin/users/${user.id}/mfa`, 'DELETE'), 204);
  await receiver.waitFor(path, 1);
  return endpoint;
}

/** The outbox row and its attempts, read straight from the file while no node runs. */
function outboxOf(databasePath: string) {
  const file = new SQLite(databasePath, { readonly: true });
  try {
    return {
      delivery: file.prepare('select status, attempts, lease_id from webhook_delivery').get() as any,
      attempts: file.prepare('select attempt, status from webhook_attempt order by attempt').all() as any[],
    };
  } finally {
    file.close();
  }
}

describe('a node stopped in the middle of a delivery loses nothing', { skip }, () => {
  test('kill -9: the claim lapses, another start delivers the same webhook-id', { timeout: 120_000 }, async () => {
    const databasePath = join(dir, 'killed.sqlite');
    const first = await start(databasePath);
    const endpoint = await deliveryInFlight(first, '/killed');
    await first.stop('SIGKILL');
    running.delete(first);
    const left = outboxOf(databasePath);
    assert.equal(left.delivery.status, 'pending');
    assert.notEqual(left.delivery.lease_id, null, 'still claimed by the dead node');
    assert.deepEqual(left.attempts, [{ attempt: 1, status: 'pending' }]);

    const second = await start(databasePath);
    // Taken over once the dead node's claim has lapsed (20 s).
    const webhooks = await receiver.waitFor('/killed', 2, 90_000);
    assert.equal(webhooks[1]?.headers['webhook-id'], webhooks[0]?.headers['webhook-id']);
    assert.equal(verifyWebhook(endpoint.secret, webhooks[1] as never).type, 'mfa.reset_by_operator');
    const log = (await expectStatus(call(second, `/admin/webhooks/${endpoint.id}/deliveries`), 200)).deliveries;
    assert.deepEqual(
      log.map((line: any) => [line.attempt, line.status]),
      [
        [2, 'succeeded'],
        [1, 'failed'],
      ],
    );
    assert.equal(await second.stop('SIGTERM'), 0);
    running.delete(second);
  });

  test('SIGTERM: the attempt is cut short and recorded, the delivery due again at once, and the exit is 0', {
    timeout: 120_000,
  }, async () => {
    const databasePath = join(dir, 'stopped.sqlite');
    const first = await start(databasePath);
    const endpoint = await deliveryInFlight(first, '/stopped');
    assert.equal(await first.stop('SIGTERM'), 0, first.output());
    running.delete(first);
    const left = outboxOf(databasePath);
    assert.deepEqual(
      { status: left.delivery.status, lease: left.delivery.lease_id },
      { status: 'pending', lease: null },
      'released, not left to lapse',
    );
    assert.deepEqual(left.attempts, [{ attempt: 1, status: 'failed' }]);

    const second = await start(databasePath);
    const webhooks = await receiver.waitFor('/stopped', 2);
    assert.equal(webhooks[1]?.headers['webhook-id'], webhooks[0]?.headers['webhook-id']);
    assert.equal(verifyWebhook(endpoint.secret, webhooks[1] as never).type, 'mfa.reset_by_operator');
    assert.equal(await second.stop('SIGTERM'), 0);
    running.delete(second);
  });
});
