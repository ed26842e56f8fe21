import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureBuilt } from '../support/browser.js';
import { type Service, startService } from '../support/service.js';

let service: Service;
before(async () => {
  ensureBuilt();
  service = await startService();
});
after(() => service.close());

/** The hashed file names the page's HTML refers to. */
async function pageAssets(): Promise<{ html: string; script: string; style: string; icon: string }> {
  const html = await (await service.call('/account/')).text();
  const find = (pattern: RegExp) => {
    const found = pattern.exec(html)?.[1];
    assert.ok(found, `the page names a file matching ${pattern}`);
    return found;
  };
  return {
    html,
    script: find(/<script type="module" src="(assets\/main-[A-Z0-9]+\.js)"/),
    style: find(/<link rel="stylesheet" href="(assets\/style-[A-Z0-9]+\.css)"/),
    icon: find(/<link rel="icon" type="image\/svg\+xml" href="(assets\/icon-[0-9a-f]+\.svg)"/),
  };
}

describe('the account page’s files (CONTRACT §17)', () => {
  test('GET /account/ is the page: HTML never cached, under a strict Content-Security-Policy', async () => {
    const response = await service.call('/account/');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    const csp = response.headers.get('content-security-policy') ?? '';
    const directives = new Map(
      csp.split(';').map((directive) => {
        const [name = '', ...values] = directive.trim().split(/\s+/);
        return [name, values.join(' ')];
      }),
    );
    assert.equal(directives.get('default-src'), "'self'");
    assert.equal(directives.get('script-src'), "'self'");
    assert.equal(directives.get('style-src'), "'self'");
    assert.equal(directives.get('connect-src'), "'self'");
    assert.equal(directives.get('frame-ancestors'), "'none'");
    assert.equal(directives.get('base-uri'), "'none'");
    assert.equal(directives.get('form-action'), "'self'");
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|data:|\*/);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(response.headers.get('referrer-policy'), 'no-referrer');

    const { html } = await pageAssets();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /<style|\sstyle=/, 'no inline style');
    assert.match(html, /integrity="sha384-[A-Za-z0-9+/=]+"/, 'Subresource Integrity on the script and style sheet');
  });

  test('the script, style sheet and icon have hashed names and a year-long immutable cache', async () => {
    const { script, style, icon } = await pageAssets();
    for (const [path, type] of [
      [script, /^text\/javascript/],
      [style, /^text\/css/],
      [icon, /^image\/svg\+xml/],
    ] as const) {
      const response = await service.call(`/account/${path}`);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type') ?? '', type);
      assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.ok((await response.arrayBuffer()).byteLength > 100);
    }
  });

  test('an unknown file is 404 with an error body; nothing outside the build is reachable', async () => {
    for (const path of ['/account/assets/main-NOPE.js', '/account/assets/..%2Findex.html', '/account/assets/']) {
      const response = await service.call(path);
      assert.equal(response.status, 404, path);
      assert.equal(((await response.json()) as { error: string }).error, 'not_found');
    }
  });

  test('/account redirects to /account/, relative, so the page also works under a path prefix; the query stays', async () => {
    const response = await fetch(`${service.url}/account?x=1`, { redirect: 'manual' });
    assert.equal(response.status, 308);
    assert.equal(response.headers.get('location'), 'account/?x=1');
  });

  test('the page is not in the OpenAPI document (it is not part of the API)', async () => {
    const document = (await (await service.call('/openapi.json')).json()) as { paths: Record<string, unknown> };
    assert.ok(!Object.keys(document.paths).some((path) => path.startsWith('/account')));
  });
});

describe('without a build', () => {
  test('GET /account/ answers 503 saying to run the build; the API still works', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'no-pages-'));
    const unbuilt = await startService({ pagesDir: empty });
    try {
      const response = await unbuilt.call('/account/');
      assert.equal(response.status, 503);
      const body = (await response.json()) as { error: string; error_description: string };
      assert.equal(body.error, 'not_ready');
      assert.match(body.error_description, /npm run build/);
      assert.equal((await unbuilt.call('/account/assets/main-X.js')).status, 503);
      assert.equal((await unbuilt.call('/healthz')).status, 200);
      assert.match(unbuilt.log(), /the account page is not built/);
    } finally {
      await unbuilt.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
