// `npm run build`: bundles the service and its commands into dist/ with esbuild. One bundle loads
// and holds less than hundreds of separate modules (idle memory 110 → 81 MB, ready 1.35 → 0.66 s:
// docs/PERFORMANCE.md). Native addons and pg (loaded only for PostgreSQL) stay in node_modules.
// Types are checked by `npm run typecheck`, not here. The account page (web/account/) is bundled for
// browsers into dist/account/: see buildAccountPage below.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { build } from 'esbuild';

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

// Built beside dist/ and then swapped in, so dist/ is never half written.
const staging = `dist.${process.pid}`;
await build({
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
  external: ['better-sqlite3', '@node-rs/argon2', 'pg'],
  // Bundled CommonJS packages call require(); ESM has none, so give them one.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
});
await buildAccountPage(join(staging, 'account'));
const previous = `dist.old.${process.pid}`;
if (existsSync('dist')) renameSync('dist', previous);
renameSync(staging, 'dist');
rmSync(previous, { recursive: true, force: true });

/**
 * The account page: its script and style sheet bundled by esbuild, every file named by a hash of its
 * content (served with a year-long immutable cache), and index.html written from web/account/index.html
 * with those names and the script's Subresource Integrity hash (the HTML itself is never cached).
 */
async function buildAccountPage(outdir) {
  const assets = join(outdir, 'assets');
  const result = await build({
    entryPoints: ['web/account/main.ts', 'web/account/style.css'],
    outdir: assets,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    metafile: true,
    logLevel: 'warning',
  });
  const named = {};
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (output.entryPoint) named[basename(output.entryPoint)] = file;
  }
  mkdirSync(assets, { recursive: true });
  const icon = readFileSync('web/account/icon.svg');
  const iconName = `icon-${hashOf(icon, 'sha256', 'hex').slice(0, 8)}.svg`;
  writeFileSync(join(assets, iconName), icon);
  const script = named['main.ts'];
  const style = named['style.css'];
  const replacements = {
    '%SCRIPT%': `assets/${basename(script)}`,
    '%SCRIPT_INTEGRITY%': `sha384-${hashOf(readFileSync(script), 'sha384', 'base64')}`,
    '%STYLE%': `assets/${basename(style)}`,
    '%STYLE_INTEGRITY%': `sha384-${hashOf(readFileSync(style), 'sha384', 'base64')}`,
    '%ICON%': `assets/${iconName}`,
  };
  let html = readFileSync('web/account/index.html', 'utf8');
  for (const [placeholder, value] of Object.entries(replacements)) html = html.replaceAll(placeholder, value);
  writeFileSync(join(outdir, 'index.html'), html);
  for (const file of readdirSync(assets)) {
    if (!['.js', '.css', '.svg'].includes(extname(file))) throw new Error(`unexpected account page asset ${file}`);
  }
}

function hashOf(content, algorithm, encoding) {
  return createHash(algorithm).update(content).digest(encoding);
}
