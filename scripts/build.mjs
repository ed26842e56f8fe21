// `npm run build`: bundles the service and its commands into dist/ with esbuild. One bundle loads
// and holds less than hundreds of separate modules (idle memory 110 → 81 MB, ready 1.35 → 0.66 s:
// docs/PERFORMANCE.md). Native addons, pg (loaded only for PostgreSQL) and OpenTelemetry stay in node_modules.
// Types are checked by `npm run typecheck`, not here. The browser pages (web/<page>/, with what they
// share in web/shared/) are bundled for browsers into dist/<page>/: see buildPage below.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { brotliCompressSync, gzipSync, constants as zlib } from 'node:zlib';
import { build, transform } from 'esbuild';

/** The newest modification time under `path`. */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

// A build newer than every input is kept as it is: a second `npm start` in the same checkout must
// not pull dist/ from under a first one that is still loading it.
const inputs = ['src', 'web', 'scripts/build.mjs', 'package-lock.json'];
if (existsSync('dist/main.js') && statSync('dist/main.js').mtimeMs > Math.max(...inputs.map(newest))) {
  process.exit(0);
}

/**
 * The browser pages: each is web/<name>/ (index.html and main.ts), served from dist/<name>/ at
 * /<name>/ (the console at /admin/console/). account/reset (the page a password-reset link opens)
 * is built after account, inside its folder.
 */
const PAGES = ['account', 'sign-in', 'console', 'account/reset'];

/**
 * Texts a page's script brings later, with the part of the script that shows them (web/shared/
 * modules.ts): by page, the part's name (its module's file name, web/<page>/<name>.ts) and the
 * catalogue keys it alone shows. The page's script carries its other English texts; the part's
 * module gets its English and the list of its catalogues in the other languages as <NAME>_TEXTS
 * (ENROLMENT_TEXTS: a JSON string of writeCatalogues' parts[name], written in by esbuild's define).
 * The hosted sign-in's enrolment (adding a factor while signing in, then the backup codes) is
 * reached by few sign-ins: its code and texts are not in the first load.
 */
const LAZY_TEXTS = {
  'sign-in': { enrolment: ['factors', 'backupCodes', 'sign-in.enrol', 'sign-in.backup'] },
};

/**
 * The pages whose style sheet is written into their HTML (a <style> element, which the page's
 * Content-Security-Policy allows by its hash: src/http/routes/pages.ts) instead of being fetched:
 * the hosted sign-in, whose first paint (issue 33) would otherwise wait for the sheet's round trip.
 */
const INLINE_STYLE = ['sign-in'];

/**
 * Pages that are also another route's answer, under another address: the hosted sign-in is what
 * the authorization endpoint (/mfa/oauth2/authorize/) answers with, so that the browser need not
 * be redirected to it (issue 33: one request and one round trip fewer). That copy of the HTML has
 * a <base> pointing its relative addresses back to the page's folder, relative itself, so that a
 * service behind a proxy under a path prefix still finds them (src/http/routes/openid.ts).
 */
const ANSWERED_ELSEWHERE = { 'sign-in': { file: 'authorize.html', base: '../../../sign-in/' } };

// Built beside dist/ and then swapped in, so dist/ is never half written.
const staging = `dist.${process.pid}`;
const server = await build({
  entryPoints: ['src/main.ts', 'src/cli/admin.ts', 'src/store/migrate-command.ts'],
  outbase: 'src',
  outdir: staging,
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Maps for debugging (node --enable-source-maps dist/main.js); loading them costs 26 MB, so start does not.
  sourcemap: true,
  // OpenTelemetry stays in node_modules too: its SDK loads only when tracing is on, and the API must
  // be the one instance the SDK registers with.
  external: ['better-sqlite3', '@node-rs/argon2', 'pg', '@opentelemetry/*', '@fastify/otel'],
  // Bundled CommonJS packages call require(); ESM has none, so give them one. Under another name than
  // createRequire, which a module of ours may import too (users/password-policy.ts, which loads the
  // common-password list from node_modules with it): two imports of one name in a chunk do not parse.
  banner: {
    js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);",
  },
  logLevel: 'warning',
  metafile: true,
});
for (const file of Object.keys(server.metafile.outputs)) {
  if (file.endsWith('.js')) await withLatin1Source(file);
}
for (const page of PAGES) await buildPage(page, join(staging, page));
const previous = `dist.old.${process.pid}`;
if (existsSync('dist')) renameSync('dist', previous);
renameSync(staging, 'dist');
rmSync(previous, { recursive: true, force: true });

/**
 * V8 keeps every script's source text for as long as the script lives, at one byte a character
 * when all of it is Latin-1 and at two bytes otherwise. esbuild writes every non-ASCII character in
 * code as an escape, but leaves comments as they are, so one character such as an ellipsis or a
 * dash in one comment of ours or of a package doubled a chunk's source in the heap: the app's chunk
 * (3.9 MB) took 7.5 MB of heap, Kysely's and libphonenumber's 0.7 MB more (docs/PERFORMANCE.md).
 * Such characters are written as `?` here, one for each UTF-16 unit, so that the source maps'
 * columns still hold. Only comments change: the file minified (comments dropped) must be the same
 * before and after, or the build fails.
 */
async function withLatin1Source(file) {
  const source = readFileSync(file, 'utf8');
  const latin1 = source.replace(/[\u0100-\uffff]/g, '?');
  if (latin1 === source) return;
  const minified = (code) =>
    transform(code, { minify: true, legalComments: 'none', format: 'esm', target: 'node20' }).then((r) => r.code);
  if ((await minified(source)) !== (await minified(latin1)))
    throw new Error(`${file}: a character outside Latin-1 is not in a comment; cannot make its source Latin-1`);
  writeFileSync(file, latin1);
}

/**
 * One page: its script (web/<page>/main.ts) and the shared style sheet (or the page's own
 * web/<page>/style.css, which imports the shared one) bundled by esbuild, the shared
 * icon copied, every file named by a hash of its content (served with a year-long immutable cache),
 * and index.html written from web/<page>/index.html with those names and the Subresource Integrity
 * hashes of the script and style sheet (the HTML itself is never cached; an INLINE_STYLE page has
 * its style sheet written in instead). Each page gets its own
 * copy of the shared files, so a page's folder holds everything it names. Every file is also
 * written compressed beside itself (see writeCompressed).
 *
 * A module the script imports with import() (a part of the page few visits reach) is a chunk of
 * its own, loaded when reached; code it shares with the script is a chunk the script imports. The
 * HTML names each with its integrity: the shared chunks as <link rel="modulepreload" integrity>
 * (fetched with the script, checked before they run), the lazy ones in <meta name="modules">, read
 * by web/shared/modules.ts, which preloads one the same way before importing it.
 */
async function buildPage(page, outdir) {
  const assets = join(outdir, 'assets');
  const lazyTexts = LAZY_TEXTS[page] ?? {};
  const catalogues = writeCatalogues(page, assets, lazyTexts);
  const result = await build({
    entryPoints: [
      `web/${page}/main.ts`,
      existsSync(`web/${page}/style.css`) ? `web/${page}/style.css` : 'web/shared/style.css',
    ],
    outdir: assets,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    minify: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    metafile: true,
    logLevel: 'warning',
    define: Object.fromEntries(
      Object.keys(lazyTexts).map((part) => [
        `${part.toUpperCase()}_TEXTS`,
        JSON.stringify(JSON.stringify(catalogues.parts[part])),
      ]),
    ),
    plugins: [withoutLazyTexts(Object.values(lazyTexts).flat()), sideEffectFree(['@simplewebauthn/browser'])],
  });
  const outputs = result.metafile.outputs;
  const named = {};
  for (const [file, output] of Object.entries(outputs)) {
    if (output.entryPoint) named[basename(output.entryPoint)] = file;
  }
  const icon = readFileSync('web/shared/icon.svg');
  const iconName = `icon-${hashOf(icon, 'sha256', 'hex').slice(0, 8)}.svg`;
  writeFileSync(join(assets, iconName), icon);
  const script = named['main.ts'];
  const style = named['style.css'];
  const integrity = (file) => `sha384-${hashOf(readFileSync(file), 'sha384', 'base64')}`;
  /** The chunks `file` imports (import statements), and theirs. */
  const staticImports = (file, found = new Set()) => {
    for (const { path, kind } of outputs[file].imports) {
      if (kind === 'import-statement' && !found.has(path)) staticImports(path, found.add(path));
    }
    return found;
  };
  const preloaded = staticImports(script);
  const lazy = Object.entries(outputs).filter(
    ([file, output]) => output.entryPoint && file !== script && file !== style,
  );
  for (const [file, output] of lazy) {
    const unchecked = [...staticImports(file)].filter((chunk) => !preloaded.has(chunk));
    // Such a chunk would be fetched with no integrity: list it here if it ever happens.
    if (unchecked.length > 0)
      throw new Error(`${output.entryPoint} imports ${unchecked}, which the page does not preload`);
  }
  for (const part of Object.keys(lazyTexts)) {
    if (!lazy.some(([, output]) => basename(output.entryPoint, '.ts') === part))
      throw new Error(`LAZY_TEXTS names ${page}'s part ${part}, which its script does not import()`);
  }
  const replacements = {
    '%CATALOGUES%': catalogues.listed,
    '%SCRIPT%': `assets/${basename(script)}`,
    '%SCRIPT_INTEGRITY%': integrity(script),
    '%ICON%': `assets/${iconName}`,
  };
  const isStyleInline = INLINE_STYLE.includes(page);
  /** Whole lines, left out when empty (a page with no chunks). */
  const lines = {
    '%STYLE%': [
      isStyleInline
        ? `<style>${readFileSync(style, 'utf8').trim()}</style>`
        : `<link rel="stylesheet" href="assets/${basename(style)}" integrity="${integrity(style)}">`,
    ],
    '%PRELOADS%': [...preloaded].map(
      (file) => `<link rel="modulepreload" href="assets/${basename(file)}" integrity="${integrity(file)}">`,
    ),
    '%MODULES%': lazy.length
      ? [
          `<meta name="modules" content="${lazy
            .map(
              ([file, output]) => `${basename(output.entryPoint, '.ts')} assets/${basename(file)} ${integrity(file)}`,
            )
            .join(', ')}">`,
        ]
      : [],
  };
  let html = readFileSync(`web/${page}/index.html`, 'utf8');
  // The forms several pages show (the sign-in steps, adding a factor) are written once, in web/shared/.
  html = html.replace(/^[ \t]*<!-- include ([\w-]+\.html) -->\n/gm, (_line, name) =>
    readFileSync(join('web/shared', name), 'utf8'),
  );
  html = withEnglishTexts(html, page);
  for (const [placeholder, value] of Object.entries(lines)) {
    html = html.replace(new RegExp(`^([ \t]*)${placeholder}\n`, 'm'), (_line, indent) =>
      value.map((line) => `${indent}${line}\n`).join(''),
    );
  }
  for (const [placeholder, value] of Object.entries(replacements)) html = html.replaceAll(placeholder, value);
  const unfilled = /%[A-Z_]+%/.exec(html)?.[0];
  if (unfilled) throw new Error(`web/${page}/index.html names ${unfilled}, which the build does not fill`);
  writeFileSync(join(outdir, 'index.html'), html);
  writeCompressed(join(outdir, 'index.html'));
  const elsewhere = ANSWERED_ELSEWHERE[page];
  if (elsewhere) {
    // First in <head>, before any element that names an address.
    const [head, rest] = html.split(/(?<=<head>\n)/);
    if (rest === undefined) throw new Error(`web/${page}/index.html has no <head> line`);
    writeFileSync(join(outdir, elsewhere.file), `${head}    <base href="${elsewhere.base}">\n${rest}`);
    writeCompressed(join(outdir, elsewhere.file));
  }
  // In the HTML, not fetched: no file to serve.
  if (isStyleInline) rmSync(style);
  for (const file of readdirSync(assets)) {
    if (!['.js', '.css', '.svg', '.json'].includes(extname(file)))
      throw new Error(`unexpected ${page} page asset ${file}`);
    writeCompressed(join(assets, file));
  }
}

/**
 * An esbuild plugin: the English catalogues (web/<area>/locales/en.json) as a page's script
 * imports them, without the keys `paths` ("factors", "sign-in.enrol"): texts a lazy part brings.
 */
function withoutLazyTexts(paths) {
  return {
    name: 'without-lazy-texts',
    setup(builder) {
      if (paths.length === 0) return;
      builder.onLoad({ filter: /[\\/]locales[\\/]en\.json$/ }, (args) => {
        const catalogue = JSON.parse(readFileSync(args.path, 'utf8'));
        return { contents: JSON.stringify(split(catalogue, paths).rest), loader: 'json' };
      });
    },
  };
}

/**
 * An esbuild plugin: the modules of `packages` have no side effects (as a package says with
 * "sideEffects": false in its package.json, which @simplewebauthn/browser does not). A module that
 * may have side effects goes wherever its package's index is imported: passkey registration went
 * into the hosted sign-in's first load with the sign-in's passkey, instead of its enrolment's chunk.
 */
function sideEffectFree(packages) {
  return {
    name: 'side-effect-free',
    setup(builder) {
      builder.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.resolving) return undefined;
        const within = (name) => args.path === name || args.importer.includes(`/node_modules/${name}/`);
        if (!packages.some(within)) return undefined;
        const { path, external, namespace, errors } = await builder.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: { resolving: true },
        });
        return { path, external, namespace, errors, sideEffects: false };
      });
    },
  };
}

/** `catalogue` as two: the texts under the keys `paths` ("factors", "sign-in.enrol") and the rest. */
function split(catalogue, paths) {
  const rest = structuredClone(catalogue);
  const picked = {};
  for (const path of paths) {
    const keys = path.split('.');
    const last = keys.pop();
    const parent = keys.reduce((found, key) => found?.[key], rest);
    if (parent?.[last] === undefined) continue;
    let into = picked;
    for (const key of keys) into = into[key] ??= {};
    into[last] = parent[last];
    delete parent[last];
  }
  return { picked, rest };
}

/**
 * Writes `file`.br (brotli at its highest quality) and `file`.gz (gzip -9) beside `file`: the page's
 * routes answer with the best one a request's Accept-Encoding allows (issue 33: the hosted
 * sign-in's first load went out as 54 KB, its script uncompressed). Made once here, at the highest
 * settings, since compressing each answer would cost every request CPU.
 */
function writeCompressed(file) {
  const content = readFileSync(file);
  const brotli = brotliCompressSync(content, {
    params: {
      [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY,
      [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT, // every page file is UTF-8 text, the icon's SVG too
      [zlib.BROTLI_PARAM_SIZE_HINT]: content.length,
    },
  });
  const gzip = gzipSync(content, { level: zlib.Z_BEST_COMPRESSION });
  // A copy no smaller than the file (a tiny catalogue) is not written: the file is served instead.
  if (brotli.length < content.length) writeFileSync(`${file}.br`, brotli);
  if (gzip.length < content.length) writeFileSync(`${file}.gz`, gzip);
}

/** The catalogues of a page's area (and the shared ones) in `language`, merged: one file a page fetches. */
function cataloguesOf(page, language) {
  const area = page.split('/')[0];
  const files = ['web/shared/locales', `web/${area}/locales`].map((folder) => join(folder, `${language}.json`));
  return Object.assign(
    {},
    ...files.filter((file) => existsSync(file)).map((file) => JSON.parse(readFileSync(file, 'utf8'))),
  );
}

/**
 * Writes the page's catalogue in each language but English (which its script carries) into its
 * assets, named by hash, and answers `listed`, what <meta name="catalogues"> lists ("de path
 * integrity, …"). A part the page loads later (`lazyTexts`, see LAZY_TEXTS) is left out of those
 * and written as a catalogue of its own in each language, listed the same way in `parts[part]`
 * with its English texts (`{ english, listed }`): the part's module carries both.
 */
function writeCatalogues(page, assets, lazyTexts) {
  mkdirSync(assets, { recursive: true });
  const paths = Object.values(lazyTexts).flat();
  const write = (catalogue, language, name) => {
    const body = JSON.stringify(catalogue);
    const file = `${name}-${hashOf(body, 'sha256', 'hex').slice(0, 8)}.json`;
    writeFileSync(join(assets, file), body);
    return `${language} assets/${file} sha384-${hashOf(body, 'sha384', 'base64')}`;
  };
  const all = cataloguesOf(page, 'en');
  for (const path of paths) {
    if (path.split('.').reduce((found, key) => found?.[key], all) === undefined)
      throw new Error(`LAZY_TEXTS names ${path}, which the English catalogues of ${page} lack`);
  }
  const languages = readdirSync('web/shared/locales')
    .map((file) => basename(file, '.json'))
    .filter((language) => language !== 'en');
  const byLanguage = Object.fromEntries(languages.map((language) => [language, cataloguesOf(page, language)]));
  const parts = {};
  for (const [part, partPaths] of Object.entries(lazyTexts)) {
    parts[part] = {
      english: split(all, partPaths).picked,
      listed: languages
        .map((language) => write(split(byLanguage[language], partPaths).picked, language, `${language}.${part}`))
        .join(', '),
    };
  }
  const listed = languages
    .map((language) => write(split(byLanguage[language], paths).rest, language, language))
    .join(', ');
  return { listed, parts };
}

/**
 * The page's HTML with the English text of each element that names one (data-i18n="key", written
 * empty) and of each attribute it names (data-i18n-attrs="attr:key"), from the shared catalogue and
 * the page's area's (web/<area>/locales/en.json): the first paint needs no script. The script then
 * shows the page in its person's language (web/shared/i18n.ts). An unknown key fails the build.
 */
function withEnglishTexts(html, page) {
  const area = page.split('/')[0];
  const catalogues = ['web/shared/locales/en.json', `web/${area}/locales/en.json`].filter((file) => existsSync(file));
  const english = Object.assign({}, ...catalogues.map((file) => JSON.parse(readFileSync(file, 'utf8'))));
  const textOf = (key) => {
    const text = key.split('.').reduce((found, part) => found?.[part], english);
    if (typeof text !== 'string')
      throw new Error(`web/${page}/index.html names ${key}, which ${catalogues.join(' and ')} lack`);
    return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
  };
  const named = html.match(/\sdata-i18n="/g)?.length ?? 0;
  let filled = 0;
  html = html.replace(/<(\w+)([^>]*\sdata-i18n="([^"]+)"[^>]*)><\/\1>/g, (_element, tag, attributes, key) => {
    filled += 1;
    return `<${tag}${attributes}>${textOf(key)}</${tag}>`;
  });
  if (filled !== named) throw new Error(`web/${page}/index.html: an element with data-i18n must be written empty`);
  return html.replace(/\sdata-i18n-attrs="([^"]+)"/g, (whole, pairs) => {
    const attributes = pairs.split(/\s+/).map((pair) => {
      const [attribute, key] = pair.split(':');
      return ` ${attribute}="${textOf(key)}"`;
    });
    return whole + attributes.join('');
  });
}

function hashOf(content, algorithm, encoding) {
  return createHash(algorithm).update(content).digest(encoding);
}
