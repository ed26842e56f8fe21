// `npm run build`: bundles the service and its commands into dist/ with esbuild. One bundle loads
// and holds less than hundreds of separate modules (idle memory 110 → 81 MB, ready 1.35 → 0.66 s:
// docs/PERFORMANCE.md). Native addons and pg (loaded only for PostgreSQL) stay in node_modules.
// Types are checked by `npm run typecheck`, not here.
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** The newest modification time under `path`. */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

// A build newer than every input is kept as it is: a second `npm start` in the same checkout must
// not pull dist/ from under a first one that is still loading it.
const inputs = ['src', 'scripts/build.mjs', 'package-lock.json'];
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
const previous = `dist.old.${process.pid}`;
if (existsSync('dist')) renameSync('dist', previous);
renameSync(staging, 'dist');
rmSync(previous, { recursive: true, force: true });
