// The image, built and run without a container engine (none runs in CI): the Dockerfile's own
// steps, read from it, in a clean folder. The build context is what `docker build` would be sent
// (the files git lists, as they are in the working tree, less what .dockerignore leaves out);
// each build stage's COPY and RUN steps run in a folder of its own; the run stage gets only what
// it copies from them; then the service starts as the image's CMD starts it, with the image's
// ENV. No prebuilt better-sqlite3 can be fetched here, and compiling it again would take minutes
// of CI's two cores: the checkout's own compile (the `npm ci` before the tests) is handed to the
// package's installer as a local prebuild, the way an organisation's binary mirror would, so the
// RUN steps run unchanged. Still slow: a file of its own, so that it runs beside the others, in
// a folder the test runner, which takes files in alphabetical order, starts among the first.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  envOf,
  execForm,
  healthcheckOf,
  type Instruction,
  instructionsOf,
  isDockerIgnored,
  parseDockerfile,
  type Stage,
} from '../support/dockerfile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mfa-image-'));
const children = new Set<ChildProcess>();

after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** What every command here gets besides a stage's ENV: PATH, and HOME for npm's settings and cache. */
const BASE_ENV = {
  PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
  HOME: process.env.HOME ?? work,
  npm_config_better_sqlite3_local_prebuilds: join(work, 'prebuilds'),
};

/** The checkout's compiled better-sqlite3, packed under the name prebuild-install looks for. */
function packLocalPrebuild(): string {
  const packageFolder = join(ROOT, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(packageFolder, 'package.json'), 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(BASE_ENV.npm_config_better_sqlite3_local_prebuilds);
  execFileSync('tar', [
    '-czf',
    join(BASE_ENV.npm_config_better_sqlite3_local_prebuilds, name),
    '-C',
    packageFolder,
    'build/Release/better_sqlite3.node',
  ]);
  return name;
}

/** The build context: the files git lists (tracked, and new ones it does not ignore) through .dockerignore. */
function copyBuildContext(destination: string): number {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((path) => path !== '');
  const ignoreFile = join(ROOT, '.dockerignore');
  const patterns = existsSync(ignoreFile) ? readFileSync(ignoreFile, 'utf8').split('\n') : [];
  let copied = 0;
  for (const path of new Set(listed)) {
    // A deleted file is still listed until the deletion is staged; a symlink (node_modules here) is no source.
    if (!existsSync(join(ROOT, path)) || !lstatSync(join(ROOT, path)).isFile()) continue;
    if (isDockerIgnored(path, patterns)) continue;
    mkdirSync(dirname(join(destination, path)), { recursive: true });
    cpSync(join(ROOT, path), join(destination, path));
    copied++;
  }
  return copied;
}

/** Runs a shell command; rejects with its output when it fails. */
function run(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`RUN ${command} failed (${code ?? signal}) in ${cwd}:\n${output}`));
    });
  });
}

/** A stage as a folder: its WORKDIR is the folder's root. */
interface StageFolder {
  folder: string;
  workdir: string;
}

/** Where an absolute path of a stage's file system lies in its folder (only paths under its WORKDIR exist there). */
function inFolder(stage: StageFolder, path: string): string {
  const absolute = posix.resolve(stage.workdir, path);
  const relative = posix.relative(stage.workdir, absolute);
  if (relative.startsWith('..')) throw new Error(`${path} lies outside the stage's WORKDIR ${stage.workdir}`);
  return join(stage.folder, relative);
}

/** COPY as Docker does it: a folder's contents into the destination; a file into it when it ends with `/`. */
function copyStep(instruction: Instruction, from: string, source: StageFolder | undefined, into: StageFolder): void {
  const paths = instruction.args.split(/\s+/);
  const destination = paths.pop();
  if (destination === undefined || paths.length === 0) throw new Error(`cannot read COPY ${instruction.args}`);
  for (const path of paths) {
    const origin = source ? inFolder(source, path) : join(from, path);
    if (!existsSync(origin)) throw new Error(`COPY ${instruction.args}: ${path} does not exist there`);
    const target = inFolder(into, destination);
    if (lstatSync(origin).isDirectory()) cpSync(origin, target, { recursive: true, verbatimSymlinks: true });
    else {
      const file = destination.endsWith('/') || paths.length > 1 ? join(target, basename(origin)) : target;
      mkdirSync(dirname(file), { recursive: true });
      cpSync(origin, file);
    }
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Runs an exec-form command whose program is `node` with this Node; resolves with its exit code. */
function runNode(command: string[], cwd: string, env: Record<string, string>): Promise<number | null> {
  assert.equal(command[0], 'node', `${JSON.stringify(command)} should start node`);
  const child = spawn(process.execPath, command.slice(1), { cwd, env, stdio: 'ignore' });
  children.add(child);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The pids whose parent is `pid`, from /proc, with their command names. */
function childrenOf(pid: number): { pid: number; name: string }[] {
  const found: { pid: number; name: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // "pid (name) state ppid …": the name may hold spaces and parentheses, so read around the last ")".
    const close = stat.lastIndexOf(')');
    const ppid = Number(stat.slice(close + 2).split(' ')[1]);
    if (ppid === pid) found.push({ pid: Number(entry), name: stat.slice(stat.indexOf('(') + 1, close) });
  }
  return found;
}

async function get(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

test("the image's steps in a clean folder: the build stage's RUN steps succeed, and the run stage's files and CMD, with its ENV, serve in one process that stops on SIGTERM with exit code 0", async (t) => {
  const started = Date.now();
  const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
  const image = stages.at(-1) as Stage;

  const context = join(work, 'context');
  t.diagnostic(`build context: ${copyBuildContext(context)} files`);
  t.diagnostic(`local prebuild: ${packLocalPrebuild()}`);

  const folders = new Map<string, StageFolder>();
  let imageFolder: StageFolder | undefined;
  for (const [index, stage] of stages.entries()) {
    const current: StageFolder = { folder: join(work, `stage-${index}`), workdir: '/' };
    mkdirSync(current.folder);
    let env: Record<string, string> = {};
    for (const instruction of stage.instructions) {
      switch (instruction.keyword) {
        case 'WORKDIR':
          // The stage's folder stands for its WORKDIR: one, set before any file arrives.
          assert.equal(readdirSync(current.folder).length, 0, 'WORKDIR changes after files were copied');
          current.workdir = posix.resolve(current.workdir, instruction.args);
          break;
        case 'ENV':
          env = { ...env, ...envOf({ base: stage.base, instructions: [instruction] }) };
          break;
        case 'COPY': {
          const from = instruction.flags.from;
          const source = from === undefined ? undefined : folders.get(from);
          if (from !== undefined && !source) throw new Error(`COPY --from=${from}: no such stage before this one`);
          copyStep(instruction, context, source, current);
          break;
        }
        case 'RUN': {
          // The image's own RUN steps shape the container's file system outside the service's
          // folder (the /data volume): image-files.test.ts checks that they install nothing.
          if (stage === image) break;
          // A cache mount (--mount=type=cache) is npm's cache: the machine's own plays its part here.
          const stepStarted = Date.now();
          await run(instruction.args, current.folder, { ...BASE_ENV, ...env });
          t.diagnostic(`RUN ${instruction.args}: ${((Date.now() - stepStarted) / 1000).toFixed(1)} s`);
          break;
        }
        case 'USER':
        case 'VOLUME':
        case 'EXPOSE':
        case 'HEALTHCHECK':
        case 'STOPSIGNAL':
        case 'CMD':
        case 'LABEL':
          break;
        default:
          throw new Error(`${instruction.keyword} ${instruction.args}: this test does not know what it does`);
      }
    }
    folders.set(String(index), current);
    if (stage.name) folders.set(stage.name, current);
    imageFolder = current;
  }
  assert.ok(imageFolder);
  const appFolder = imageFolder.folder;

  // Only what the run stage copied: no source, no development dependency.
  assert.deepEqual(readdirSync(appFolder).sort(), ['dist', 'node_modules', 'package.json']);
  // A package the lockfile marks dev-only must be gone; a development dependency that a production
  // one also needs (yaml, through @fastify/swagger) rightly stays.
  const { packages } = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const leftOver = Object.entries(packages)
    .filter(([path, entry]) => entry.dev && path.startsWith('node_modules/'))
    .map(([path]) => path)
    .filter((path) => existsSync(join(appFolder, path)));
  assert.deepEqual(leftOver, [], 'development dependencies left in the image');

  const port = await freePort();
  const dataFolder = join(work, 'data');
  // What an operator sets for NODE_ENV=production (README "With containers"); the SMS provider
  // is never called here.
  const env: Record<string, string> = {
    ...BASE_ENV,
    ...envOf(image),
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(dataFolder, 'mfa.sqlite')}`,
    SECRET_KEY: 'image-test-secret-key-0123456789abcdef',
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000000',
    TWILIO_AUTH_TOKEN: 'image-test-twilio-token',
    TWILIO_FROM: '+15005550006',
    SMTP_URL: 'smtp://127.0.0.1:9',
    TWILIO_API_URL: 'http://127.0.0.1:9',
  };
  const command = execForm(instructionsOf(image, 'CMD').at(-1)?.args ?? '');
  assert.equal(command[0], 'node');
  const service = spawn(process.execPath, command.slice(1), { cwd: appFolder, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(service);
  let output = '';
  service.stdout.on('data', (chunk) => {
    output += chunk;
  });
  service.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    service.once('exit', (code, signal) => resolve({ code, signal })),
  );

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (service.exitCode !== null) assert.fail(`the service exited with ${service.exitCode}:\n${output}`);
    const answer = await get(`${url}/healthz`).catch(() => undefined);
    if (answer?.status === 200) break;
    if (Date.now() > deadline) assert.fail(`/healthz did not answer 200 within 30 s:\n${output}`);
    await sleep(100);
  }
  assert.equal((await get(`${url}/readyz`)).status, 200, output);
  const metadata = await get(`${url}/.well-known/openid-configuration`);
  assert.equal(metadata.status, 200, output);
  assert.equal(typeof metadata.body.issuer, 'string');
  assert.equal(typeof metadata.body.jwks_uri, 'string');

  // The image's own HEALTHCHECK, run as Docker runs it: in the container, with its environment.
  const healthcheck = healthcheckOf(instructionsOf(image, 'HEALTHCHECK').at(-1) as Instruction);
  assert.equal(await runNode(healthcheck.command, appFolder, env), 0, 'the HEALTHCHECK fails on a healthy service');

  // One process: the settings are in place at start, so the service does not start itself again.
  if (process.platform === 'linux' && service.pid !== undefined) {
    const cmdline = readFileSync(`/proc/${service.pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    assert.deepEqual(cmdline, [process.execPath, ...command.slice(1)], 'the service process runs the CMD as given');
    assert.deepEqual(childrenOf(service.pid), [], 'the service started a process of its own');
  }

  service.kill('SIGTERM');
  const exit = await Promise.race([exited, sleep(10_000, undefined, { ref: false })]);
  assert.deepEqual(exit, { code: 0, signal: null }, `SIGTERM should end the service with 0:\n${output}`);
  assert.notEqual(await runNode(healthcheck.command, appFolder, env), 0, 'the HEALTHCHECK passes with no service');
  t.diagnostic(`the image's steps took ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
