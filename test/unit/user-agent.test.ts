import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeUserAgent } from '../../src/notices/user-agent.js';

// CONTRACT §20: a notice names the browser in words a person reads, never the raw header.

test('common browsers are named with their major version and system', () => {
  const cases: [string, string][] = [
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
      'Chrome 120 on Windows',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91',
      'Edge 120 on Windows',
    ],
    ['Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0', 'Firefox 121 on Linux'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
      'Safari 17 on iOS',
    ],
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15',
      'Safari 17 on macOS',
    ],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36',
      'Chrome 120 on Android',
    ],
  ];
  for (const [header, expected] of cases) assert.equal(describeUserAgent(header), expected);
});

test('anything else is undefined: no word of the header reaches the notice unless it names a known browser', () => {
  assert.equal(describeUserAgent('curl/8.5.0'), undefined);
  assert.equal(describeUserAgent('https://acme-support.example/cancel-recovery?u=victim'), undefined);
  assert.equal(describeUserAgent(`evil\r\nBcc: x@y.example ${'a'.repeat(100)}`), undefined);
  assert.equal(describeUserAgent('Visit https://evil.example Firefox/121.0'), 'Firefox 121');
  assert.equal(describeUserAgent(''), undefined);
  assert.equal(describeUserAgent(undefined), undefined);
});
