import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientNetwork } from '../../src/oauth/login-throttle.js';

describe('clientNetwork', () => {
  test('an IPv4 address is its own network', () => {
    assert.equal(clientNetwork('203.0.113.7'), '203.0.113.7');
  });

  test('an IPv4-mapped IPv6 address counts as the IPv4 address', () => {
    assert.equal(clientNetwork('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientNetwork('::FFFF:203.0.113.7'), '203.0.113.7');
  });

  test('IPv6 addresses count by their /64, however they are written', () => {
    const network = '2001:db8:a:b::/64';
    for (const address of ['2001:db8:a:b::1', '2001:0db8:000a:000b:ffff:ffff:ffff:ffff', '2001:DB8:A:B:1:2:3:4']) {
      assert.equal(clientNetwork(address), network, address);
    }
    assert.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientNetwork('::1'), '0:0:0:0::/64');
    assert.notEqual(clientNetwork('2001:db8:a:c::1'), network);
  });
});
