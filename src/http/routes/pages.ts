import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import { ServiceError } from '../../errors.js';
import type { App } from '../app-types.js';

/**
 * A built browser page (web/<name>/, bundled by `npm run build` into dist/<name>/; the account page
 * is CONTRACT §17), read once at start.
 */
export interface Page {
  html: Buffer;
  /** By file name; every name carries a hash of its content. */
  assets: ReadonlyMap<string, { body: Buffer; contentType: string }>;
}

/**
 * Only the page's own files run or style it: no inline script or style, no other origin. The QR
 * code is drawn as SVG elements, so images need no `data:`; Trusted Types make any HTML-string
 * sink (innerHTML and the like) throw, since the pages build their DOM from elements and text only.
 * One policy for every page: what one page may do, the others may too.
 */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** The headers every page is served with. */
export const PAGE_HEADERS = {
  'content-security-policy': PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
};

/**
 * Where `npm run build` puts the pages: dist/ beside the package.json above this module, so that the
 * bundle (dist/main.js) and the source run by tsx (src/http/routes/pages.ts) find the same folder.
 * Undefined when no package.json is above.
 */
export function findPagesDir(from: string = fileURLToPath(import.meta.url)): string | undefined {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist');
    if (dirname(dir) === dir) return undefined;
  }
}

/** The built page `name`'s folder in `pagesDir` (default: this checkout's dist/); undefined without one. */
export function findPageDir(name: string, pagesDir: string | undefined = findPagesDir()): string | undefined {
  return pagesDir === undefined ? undefined : join(pagesDir, name);
}

/** Reads the built page from `dir`; undefined when it was not built there. */
export function loadPage(dir: string | undefined): Page | undefined {
  if (dir === undefined || !existsSync(join(dir, 'index.html'))) return undefined;
  const assetsDir = join(dir, 'assets');
  const assets = new Map<string, { body: Buffer; contentType: string }>();
  for (const name of existsSync(assetsDir) ? readdirSync(assetsDir) : []) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType) assets.set(name, { body: readFileSync(join(assetsDir, name)), contentType });
  }
  return { html: readFileSync(join(dir, 'index.html')), assets };
}

const AssetParams = Type.Object({ name: Type.String({ maxLength: 100 }) });

/**
 * `GET <path>` (default `/<name>/`): a page and its static files, on the service's own origin; 503
 * while `page` is undefined (not built).
 */
export function pageRoutes(
  app: App,
  { name, page, path = `/${name}/` }: { name: string; page: Page | undefined; path?: string },
) {
  const notBuilt = () =>
    new ServiceError('not_ready', `the ${name} page is not built: run \`npm run build\` (npm start does it)`);

  const lastSegment = path.split('/').at(-2) ?? name;
  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    // The page names its files and the API relative to itself, so it must be at …/<name>/.
    // Relative to the request's own folder (/account/reset → reset/), its query kept (a reset link's token).
    const [requestPath = '', query] = request.url.split('?');
    if (!requestPath.endsWith('/'))
      return reply.redirect(`${lastSegment}/${query === undefined ? '' : `?${query}`}`, 308);
    if (!page) throw notBuilt();
    // no-cache: the HTML names the current hashed files, so it is checked on every visit.
    return reply
      .headers({ ...PAGE_HEADERS, 'cache-control': 'no-cache', 'content-type': 'text/html; charset=utf-8' })
      .send(page.html);
  });

  app.get(`${path}assets/:name`, { schema: { hide: true, params: AssetParams } }, async (request, reply) => {
    if (!page) throw notBuilt();
    const asset = page.assets.get(request.params.name);
    if (!asset) throw new ServiceError('not_found', `the ${name} page has no such file`);
    // Named by their content: a changed file gets a new name, so a year-long cache is safe.
    return reply
      .headers({
        ...PAGE_HEADERS,
        'cache-control': 'public, max-age=31536000, immutable',
        'content-type': asset.contentType,
      })
      .send(asset.body);
  });
}
