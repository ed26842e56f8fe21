import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors.js';
import type { App } from '../app-types.js';

/**
 * A built browser page (web/<name>/, bundled by `npm run build` into dist/<name>/; the account page
 * is CONTRACT §17), read once at start.
 */
export interface Page {
  html: PageFile;
  /** The headers the page is served with: PAGE_HEADERS, its CSP allowing the HTML's own style elements. */
  headers: Record<string, string>;
  /** By file name; every name carries a hash of its content. */
  assets: ReadonlyMap<string, PageFile>;
  /**
   * The page as another route answers it, at that route's address (the hosted sign-in as the
   * authorization endpoint's answer: scripts/build.mjs, ANSWERED_ELSEWHERE), and its headers;
   * undefined for a page that is only at its own address.
   */
  elsewhere?: { html: PageFile; headers: Record<string, string> };
}

/** The copy of a page that another route answers with (scripts/build.mjs, ANSWERED_ELSEWHERE). */
const ELSEWHERE_FILE = 'authorize.html';

/** The content codings the build writes beside each page file, in the order they are preferred. */
const ENCODINGS = [
  { coding: 'br', suffix: '.br' },
  { coding: 'gzip', suffix: '.gz' },
] as const;
type Coding = (typeof ENCODINGS)[number]['coding'];

/** A page's file as built, and compressed by the build (each coding the build made smaller). */
export interface PageFile {
  body: Buffer;
  contentType: string;
  encoded: Partial<Record<Coding, Buffer>>;
}

/**
 * Only the page's own files run or style it: no inline script or style (but the style elements
 * the build wrote into a page's HTML, each allowed by its hash: pageCsp), no other origin. The QR
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

/**
 * PAGE_CSP with each of `html`'s <style> elements allowed by its hash (style-src 'sha256-…'): the
 * build writes the hosted sign-in's style sheet into its HTML (scripts/build.mjs, INLINE_STYLE),
 * so that its first paint does not wait for the sheet's round trip (issue 33). Only those exact
 * texts: an injected <style> or style attribute is still refused. An HTML with a <base> of its own
 * (a page answered at another address, which points back to the page's folder) is allowed a base
 * on our origin; every other page none.
 */
export function pageCsp(html: string): string {
  const hashes = [...html.matchAll(/<style>([^<]*)<\/style>/g)].map(
    ([, style = '']) => `'sha256-${createHash('sha256').update(style, 'utf8').digest('base64')}'`,
  );
  let csp = PAGE_CSP;
  if (hashes.length > 0) csp = csp.replace("style-src 'self'", `style-src 'self' ${hashes.join(' ')}`);
  if (/<base /.test(html)) csp = csp.replace("base-uri 'none'", "base-uri 'self'");
  return csp;
}

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
  const assets = new Map<string, PageFile>();
  // The compressed copies (.br, .gz) have no content type of their own: they are read with their file.
  for (const name of existsSync(assetsDir) ? readdirSync(assetsDir) : []) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType) assets.set(name, readPageFile(join(assetsDir, name), contentType));
  }
  const readHtml = (name: string) => {
    const html = readPageFile(join(dir, name), 'text/html; charset=utf-8');
    return { html, headers: { ...PAGE_HEADERS, 'content-security-policy': pageCsp(html.body.toString('utf8')) } };
  };
  const elsewhere = existsSync(join(dir, ELSEWHERE_FILE)) ? readHtml(ELSEWHERE_FILE) : undefined;
  return { ...readHtml('index.html'), assets, ...(elsewhere && { elsewhere }) };
}

/** The file at `path` and the compressed copies the build wrote beside it, where smaller. */
function readPageFile(path: string, contentType: string): PageFile {
  const body = readFileSync(path);
  const encoded: PageFile['encoded'] = {};
  for (const { coding, suffix } of ENCODINGS) {
    if (!existsSync(path + suffix)) continue;
    const compressed = readFileSync(path + suffix);
    if (compressed.length < body.length) encoded[coding] = compressed;
  }
  return { body, contentType, encoded };
}

/**
 * The content coding to answer with (RFC 9110 §12.5.3): the first of br and gzip that the request's
 * Accept-Encoding allows (named, or by `*`, with a q above 0) and the file has, else none (identity).
 * Without the header, identity: a client that names no coding may know none. Identity is answered
 * even when refused (`identity;q=0`): a 415 would help no browser, and §12.5.3 allows it.
 */
function chooseCoding(acceptEncoding: string | undefined, available: PageFile['encoded']): Coding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const member of acceptEncoding.split(',')) {
    const [name = '', ...parameters] = member.split(';').map((part) => part.trim().toLowerCase());
    if (!name) continue;
    const q = parameters.find((parameter) => /^q\s*=/.test(parameter));
    const weight = q === undefined ? 1 : Number(q.slice(q.indexOf('=') + 1).trim());
    // A malformed q is not read as an acceptance.
    weights.set(name, Number.isFinite(weight) ? weight : 0);
  }
  const anyOther = weights.get('*') ?? 0;
  return ENCODINGS.find(({ coding }) => available[coding] && (weights.get(coding) ?? anyOther) > 0)?.coding;
}

/** Answers `file` in the best coding the request allows; its other headers are the caller's. */
export function sendPageFile(request: FastifyRequest, reply: FastifyReply, file: PageFile) {
  const coding = chooseCoding(request.headers['accept-encoding'], file.encoded);
  // The answer differs by Accept-Encoding: a shared cache must keep one copy per coding.
  reply.header('vary', 'accept-encoding').header('content-type', file.contentType);
  if (coding === undefined) return reply.send(file.body);
  return reply.header('content-encoding', coding).send(file.encoded[coding]);
}

/** 503 for a page whose files are not in dist/, saying how to build them. */
export function pageNotBuilt(name: string): ServiceError {
  return new ServiceError('not_ready', `the ${name} page is not built: run \`npm run build\` (npm start does it)`);
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
  const lastSegment = path.split('/').at(-2) ?? name;
  app.get(path, { schema: { hide: true } }, async (request, reply) => {
    // The page names its files and the API relative to itself, so it must be at …/<name>/.
    // Relative to the request's own folder (/account/reset → reset/), its query kept (a reset link's token).
    const [requestPath = '', query] = request.url.split('?');
    if (!requestPath.endsWith('/'))
      return reply.redirect(`${lastSegment}/${query === undefined ? '' : `?${query}`}`, 308);
    if (!page) throw pageNotBuilt(name);
    // no-cache: the HTML names the current hashed files, so it is checked on every visit.
    return sendPageFile(request, reply.headers({ ...page.headers, 'cache-control': 'no-cache' }), page.html);
  });

  app.get(`${path}assets/:name`, { schema: { hide: true, params: AssetParams } }, async (request, reply) => {
    if (!page) throw pageNotBuilt(name);
    const asset = page.assets.get(request.params.name);
    if (!asset) throw new ServiceError('not_found', `the ${name} page has no such file`);
    // Named by their content: a changed file gets a new name, so a year-long cache is safe.
    return sendPageFile(
      request,
      reply.headers({ ...page.headers, 'cache-control': 'public, max-age=31536000, immutable' }),
      asset,
    );
  });
}
