import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Service, startService } from '../support/service.js';

// Issue 31: the account page names the service (SERVICE_NAME) in its header before anyone signs in.

let service: Service;
before(async () => {
  service = await startService({ env: { SERVICE_NAME: "Nordlicht Bank & Co's" } });
});
after(() => service.close());

describe('GET /mfa/service/', () => {
  test('answers SERVICE_NAME to anyone, without a token, and may be cached a little', async () => {
    const response = await service.call('/mfa/service/');
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { service_name: "Nordlicht Bank & Co's" });
    assert.equal(response.headers.get('cache-control'), 'public, max-age=300');
  });
});
