import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestSchema, onPostgres, POSTGRES_URL } from '../support/postgres.js';
import { expectStatus, type Service, startService } from '../support/service.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const PASSWORD = 'correct horse battery';

describe('while PostgreSQL is unreachable', { skip: !onPostgres && 'runs in the PostgreSQL pass' }, () => {
  let service: Service;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let schema: Awaited<ReturnType<typeof createTestSchema>>;

  before(async () => {
    const server = new URL(POSTGRES_URL);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    schema = await createTestSchema();
    const viaProxy = new URL(schema.databaseUrl);
    viaProxy.port = String(proxy.port);
    service = await startService({ env: { DATABASE_URL: viaProxy.toString(), DATABASE_CONNECT_TIMEOUT_MS: '1000' } });
  });

  after(async () => {
    await service.close();
    await proxy.cut();
    await schema.drop();
  });

  test('the service answers 503 with an error body, and recovers by itself when the database is back', async () => {
    await service.createUser('outage', PASSWORD);
    const token = await service.accessToken('outage', PASSWORD);
    await expectStatus(service.call('/mfa/', { token }), 200);

    await proxy.cut();
    for (const pending of [service.call('/mfa/', { token }), service.login('outage', PASSWORD)]) {
      const response = await pending;
      assert.equal(response.status, 503);
      const body = (await response.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
      assert.equal(body.error, 'database_unavailable');
      assert.ok(response.headers.get('retry-after'));
    }

    await proxy.restore();
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
      status = (await service.call('/mfa/', { token })).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(status, 200, 'the service recovered without a restart');
    await expectStatus(service.login('outage', PASSWORD), 200);
  });
});
