import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createResourceServer } from '../../examples/resource-server.js';
import { expectStatus, nextPhone, type Service, startService } from '../support/service.js';

const PASSWORD = 'correct horse battery';

let service: Service;
let resourceServer: ReturnType<typeof createResourceServer>;
let api: string;
before(async () => {
  service = await startService();
  resourceServer = createResourceServer({
    issuer: service.config.issuer,
    jwksUri: `${service.url}/.well-known/jwks.json`,
  });
  await new Promise<void>((resolve) => resourceServer.listen(0, '127.0.0.1', resolve));
  api = `http://127.0.0.1:${(resourceServer.address() as AddressInfo).port}`;
});
after(async () => {
  resourceServer.close();
  await service.close();
});

function call(path: string, token?: string) {
  return fetch(api + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

describe('examples/resource-server.ts, protecting an API with this service’s tokens', () => {
  test('a password-only token reads /profile; /payments answers the step-up challenge', async () => {
    await service.createUser('example-weak', PASSWORD);
    const weak = await service.accessToken('example-weak', PASSWORD);
    assert.equal((await call('/profile', weak)).status, 200);
    const refused = await call('/payments', weak);
    assert.equal(refused.status, 401);
    assert.equal(
      refused.headers.get('www-authenticate'),
      'Bearer error="insufficient_user_authentication", acr_values="aal2", max_age=600',
    );
  });

  test('a second-factor token pays; no token gets the bare challenge (RFC 6750 §3.1), a forged one invalid_token', async () => {
    const phone = nextPhone();
    const { token, userId } = await service.createUserWithMfa('example-strong', PASSWORD, phone);
    assert.deepEqual(await expectStatus(call('/payments', token), 200), { route: '/payments', user: userId });
    // RFC 6750 §3.1: no credentials, no error code; a bad token is invalid_token.
    const bare = await call('/payments');
    assert.equal(bare.status, 401);
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
    assert.equal(((await bare.json()) as { error?: string }).error, undefined);
    const forged = await call('/payments', `${token.slice(0, -2)}xx`);
    assert.equal(forged.status, 401);
    assert.equal(forged.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
  });
});
