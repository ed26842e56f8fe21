import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ensureBuilt } from '../support/browser.js';
import { type Service, startService } from '../support/service.js';

let service: Service;
before(async () => {
  ensureBuilt();
  service = await startService();
});
after(() => service.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The bytes as they came, not decoded (fetch would decode them). */
  body: Buffer;
}

/** `path` by node:http, which sends no Accept-Encoding of its own and decodes nothing. */
function raw(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${service.url}${path}`, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
      );
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

function decoded(answer: RawAnswer): Buffer {
  switch (answer.headers['content-encoding']) {
    case 'br':
      return brotliDecompressSync(answer.body);
    case 'gzip':
      return gunzipSync(answer.body);
    case undefined:
      return answer.body;
    default:
      throw new Error(`unexpected content-encoding ${answer.headers['content-encoding']}`);
  }
}

/**
 * The hosted sign-in's HTML and the files it names, with the integrity it gives each: the script,
 * the chunk it shares with its enrolment (preloaded), the enrolment's chunk (loaded when reached),
 * the icon, the German catalogue; and its style sheet, written into the HTML.
 */
async function signInFiles() {
  const html = decoded(await raw('/sign-in/', { 'accept-encoding': 'br' })).toString('utf8');
  const find = (pattern: RegExp) => {
    const found = pattern.exec(html);
    assert.ok(found, `the page names a file matching ${pattern}`);
    return found;
  };
  const script = find(/<script type="module" src="(assets\/main-[A-Z0-9]+\.js)" integrity="([^"]+)"/);
  const preloads = [
    ...html.matchAll(/<link rel="modulepreload" href="(assets\/chunk-[A-Z0-9]+\.js)" integrity="([^"]+)">/g),
  ];
  assert.equal(preloads.length, 1, 'one chunk shared by the script and its enrolment');
  const enrolment = find(/<meta name="modules" content="enrolment (assets\/chunk-[A-Z0-9]+\.js) (sha384-[^"]+)">/);
  const icon = find(/<link rel="icon" type="image\/svg\+xml" href="(assets\/icon-[0-9a-f]+\.svg)"/);
  const style = find(/<style>([^<]+)<\/style>/);
  const catalogues = find(/<meta name="catalogues" content="([^"]*)"/)[1] ?? '';
  const german = /de (assets\/de-[0-9a-f]+\.json) (sha384-\S+?),?(?:\s|$)/.exec(catalogues);
  assert.ok(german, 'the page lists a German catalogue');
  return {
    html,
    script: { path: `/sign-in/${script[1]}`, integrity: script[2] },
    shared: { path: `/sign-in/${preloads[0]?.[1]}`, integrity: preloads[0]?.[2] },
    enrolment: { path: `/sign-in/${enrolment[1]}`, integrity: enrolment[2] },
    icon: { path: `/sign-in/${icon[1]}` },
    style: style[1] ?? '',
    german: { path: `/sign-in/${german[1]}`, integrity: german[2] },
  };
}

const sri = (bytes: Buffer) => `sha384-${createHash('sha384').update(bytes).digest('base64')}`;

describe('the pages’ files, compressed by the build (issue 33)', () => {
  test('br is chosen first, then gzip, then none; every answer decodes to the same bytes and says it varies', async () => {
    const { script } = await signInFiles();
    const identity = await raw(script.path);
    assert.equal(identity.headers['content-encoding'], undefined, 'no Accept-Encoding: the file as it is');
    assert.equal(identity.headers.vary, 'accept-encoding');
    for (const [acceptEncoding, coding] of [
      ['gzip, deflate, br', 'br'],
      ['br', 'br'],
      ['gzip', 'gzip'],
      ['deflate, gzip;q=0.5', 'gzip'],
      ['GZIP', 'gzip'],
      ['*', 'br'],
      ['deflate', undefined],
      ['identity', undefined],
      ['', undefined],
    ] as const) {
      const answer = await raw(script.path, { 'accept-encoding': acceptEncoding });
      assert.equal(answer.status, 200, acceptEncoding);
      assert.equal(answer.headers['content-encoding'], coding, `Accept-Encoding: ${acceptEncoding}`);
      assert.equal(answer.headers.vary, 'accept-encoding', acceptEncoding);
      assert.match(String(answer.headers['content-type']), /^text\/javascript/);
      assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(Number(answer.headers['content-length']), answer.body.length);
      assert.deepEqual(decoded(answer), identity.body, `Accept-Encoding: ${acceptEncoding}`);
      if (coding) assert.ok(answer.body.length < identity.body.length / 2, `${coding} at most half the script`);
    }
  });

  test('a coding refused with q=0 is never chosen, by name or by *', async () => {
    const { script } = await signInFiles();
    for (const [acceptEncoding, coding] of [
      ['br;q=0, gzip', 'gzip'],
      ['gzip, br; q=0', 'gzip'],
      ['br;q=0.0, gzip;q=0.000', undefined],
      ['*;q=0, gzip', 'gzip'],
      ['*, br;q=0', 'gzip'],
      ['*;q=0', undefined],
      ['br;q=nonsense, gzip', 'gzip'],
      ['br;q=0.001', 'br'],
    ] as const) {
      const answer = await raw(script.path, { 'accept-encoding': acceptEncoding });
      assert.equal(answer.headers['content-encoding'], coding, `Accept-Encoding: ${acceptEncoding}`);
      assert.equal(sri(decoded(answer)), script.integrity, acceptEncoding);
    }
  });

  test('the Subresource Integrity hashes hold for the decoded scripts, chunks and catalogues in every coding', async () => {
    const files = await signInFiles();
    // The German texts of the enrolment: listed, with their hash, in the enrolment's chunk.
    const chunk = decoded(await raw(files.enrolment.path, { 'accept-encoding': 'br' })).toString('utf8');
    const part = /de assets\/(de\.enrolment-[0-9a-f]+\.json) (sha384-[\w+/=]+)/.exec(chunk);
    assert.ok(part, 'the enrolment names its German catalogue');
    const germanEnrolment = { path: `/sign-in/assets/${part[1]}`, integrity: part[2] };
    for (const file of [files.script, files.shared, files.enrolment, files.german, germanEnrolment]) {
      for (const acceptEncoding of ['br', 'gzip', 'identity']) {
        const answer = await raw(file.path, { 'accept-encoding': acceptEncoding });
        assert.equal(answer.status, 200, file.path);
        assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.equal(sri(decoded(answer)), file.integrity, `${file.path} with ${acceptEncoding}`);
      }
    }
  });

  test('the hosted sign-in’s style sheet is in its HTML, allowed by its hash alone; the other pages fetch theirs', async () => {
    const { style } = await signInFiles();
    const hash = `'sha256-${createHash('sha256').update(style).digest('base64')}'`;
    for (const coding of ['br', 'identity']) {
      const csp = String((await raw('/sign-in/', { 'accept-encoding': coding })).headers['content-security-policy']);
      const styleSrc = csp.split('; ').find((directive) => directive.startsWith('style-src '));
      assert.equal(styleSrc, `style-src 'self' ${hash}`, coding);
      assert.match(csp, /script-src 'self';/, 'no script is allowed inline');
    }
    for (const path of ['/account/', '/account/reset/', '/admin/console/']) {
      const answer = await raw(path, { 'accept-encoding': 'br' });
      const html = decoded(answer).toString('utf8');
      assert.match(html, /<link rel="stylesheet" href="assets\/style-[A-Z0-9]+\.css" integrity="sha384-[^"]+">/, path);
      assert.doesNotMatch(html, /<style>/, path);
      assert.match(String(answer.headers['content-security-policy']), /style-src 'self';/, path);
    }
  });

  test('the HTML is compressed too, still never cached, and every page is', async () => {
    for (const path of ['/sign-in/', '/account/', '/account/reset/', '/admin/console/']) {
      const identity = await raw(path);
      assert.equal(identity.status, 200, path);
      for (const coding of ['br', 'gzip']) {
        const answer = await raw(path, { 'accept-encoding': coding });
        assert.equal(answer.headers['content-encoding'], coding, path);
        assert.equal(answer.headers['cache-control'], 'no-cache', path);
        assert.equal(answer.headers.vary, 'accept-encoding', path);
        assert.match(String(answer.headers['content-type']), /^text\/html; charset=utf-8/);
        assert.ok(answer.headers['content-security-policy'], path);
        assert.deepEqual(decoded(answer), identity.body, `${path} with ${coding}`);
      }
    }
  });

  test('HEAD answers the headers GET would, with no body', async () => {
    const { script, icon } = await signInFiles();
    for (const path of ['/sign-in/', script.path, icon.path]) {
      for (const acceptEncoding of ['br', 'gzip', 'identity']) {
        const get = await raw(path, { 'accept-encoding': acceptEncoding });
        const head = await raw(path, { 'accept-encoding': acceptEncoding }, 'HEAD');
        assert.equal(head.status, 200, path);
        assert.equal(head.body.length, 0);
        for (const name of ['content-encoding', 'content-type', 'content-length', 'vary', 'cache-control']) {
          assert.equal(head.headers[name], get.headers[name], `${name} of HEAD ${path} (${acceptEncoding})`);
        }
      }
    }
  });

  test('a request that asks for a file again is answered in full: no validator is given, so no 304', async () => {
    const { script } = await signInFiles();
    const first = await raw(script.path, { 'accept-encoding': 'br' });
    assert.equal(first.headers.etag, undefined);
    assert.equal(first.headers['last-modified'], undefined);
    const again = await raw(script.path, {
      'accept-encoding': 'br',
      'if-none-match': '*',
      'if-modified-since': new Date().toUTCString(),
    });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
  });

  test('the hosted sign-in’s first load (its HTML with the style sheet, script, shared chunk and icon; in German its catalogue too) weighs under 25 KB as brotli sends it', async () => {
    const { script, shared, icon, german } = await signInFiles();
    let bytes = 0;
    for (const path of ['/sign-in/', script.path, shared.path, icon.path]) {
      bytes += (await raw(path, { 'accept-encoding': 'br' })).body.length;
    }
    assert.ok(bytes <= 25 * 1024, `${bytes} bytes`);
    const inGerman = bytes + (await raw(german.path, { 'accept-encoding': 'br' })).body.length;
    assert.ok(inGerman <= 25 * 1024, `${inGerman} bytes in German`);
  });
});
