// `npm run build`: bundles the service and its commands into dist/ with esbuild. One bundle loads
// and holds less than hundreds of separate modules (idle memory 110 → 85 MB, ready 1.35 → 0.67 s:
// docs/PERFORMANCE.md). Native addons and pg (loaded only for PostgreSQL) stay in node_modules.
// Types are checked by `npm run typecheck`, not here.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: ['src/main.ts', 'src/cli/admin.ts', 'src/store/migrate-command.ts'],
  outbase: 'src',
  outdir: 'dist',
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Maps for debugging (node --enable-source-maps dist/main.js); loading them costs 26 MB, so start does not.
  sourcemap: true,
  external: ['better-sqlite3', 'argon2', 'pg'],
  // Bundled CommonJS packages call require(); ESM has none, so give them one.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
});
