// Bundles every test file (test/<folder>/*.test.ts, with the source it imports) into .test-build/, so
// that `npm test` runs plain JavaScript. Under `node --import tsx` each test process sends hundreds of
// modules through the loader hooks' thread, about 1.5–2 s of CPU per file and several minutes of the
// suite on two cores; bundled, a process loads one file and its chunks. Packages stay in node_modules
// (loaded as they are in production), except JSON files imported from them, which Node would refuse
// without an import attribute once the import leaves the bundle.
// Every module keeps its own `import.meta.url` (esbuild would give each the bundle's): files found
// beside a module (README.md, dist/, docs/screenshots/) are found where they are, and an example's
// "run me when I am the main module" check stays false inside a test.
// One test file is still run straight from source with `node --import tsx --test test/http/x.test.ts`.
import { readFileSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const FOLDERS = ['test/container', 'test/unit', 'test/store', 'test/http', 'test/browser'];
const entryPoints = [];
for (const folder of FOLDERS) {
  for (const name of await readdir(folder)) if (name.endsWith('.test.ts')) entryPoints.push(join(folder, name));
}

const keepModuleUrls = {
  name: 'keep-module-urls',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (args.path.endsWith('.json') ? undefined : { external: true }));
    build.onLoad({ filter: /\.ts$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replaceAll(
        'import.meta.url',
        JSON.stringify(pathToFileURL(args.path).href),
      ),
      loader: 'ts',
    }));
  },
};

rmSync('.test-build', { recursive: true, force: true });
await build({
  entryPoints,
  outbase: '.',
  outdir: '.test-build',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  plugins: [keepModuleUrls],
  logLevel: 'warning',
});
