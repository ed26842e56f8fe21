// What the Dockerfile and compose.yaml promise, read from them: who the image runs as, what it
// holds, how it is checked and stopped, that its start settings are the service's own, and that
// compose runs two nodes as one service on a healthy PostgreSQL. image-steps.test.ts runs the
// Dockerfile's steps; `docker compose config` checks compose.yaml where Docker Compose is installed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '../../src/config.js';
import { START_ENV, V8_FLAGS } from '../../src/start-settings.js';
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
const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const image = stages.at(-1) as Stage;
const imageEnv = envOf(image);

/** The last instruction of a keyword in the image's stage; fails when there is none. */
function last(keyword: string): Instruction {
  const found = instructionsOf(image, keyword).at(-1);
  assert.ok(found, `the image's stage has no ${keyword}`);
  return found;
}

/** What NODE_ENV=production requires besides the image's ENV (README "With containers"). */
const PRODUCTION_SETTINGS = {
  SECRET_KEY: 'image-files-test-secret-key-0123456789',
  SMS_PROVIDER: 'twilio',
  TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000001',
  TWILIO_AUTH_TOKEN: 'twilio-auth-token',
  TWILIO_FROM: '+15005550006',
  SMTP_URL: 'smtp://mail.example.com:587',
};

describe('the Dockerfile', () => {
  test('builds in one stage and runs on node:20 or later, slim Debian (glibc, which the allocator settings are for)', () => {
    assert.ok(stages.length >= 2, 'a build stage and a run stage');
    const match = /^node:(\d+)(?:\.[\d.]+)?-(\w+)-slim$/.exec(image.base);
    assert.ok(match, `the run stage's base ${image.base} is not node:<version>-<debian>-slim`);
    assert.ok(Number(match[1]) >= 20, `node ${match[1]} is older than 20`);
  });

  test('runs as a user that is not root, checks /healthz with Node (the slim image has no curl), stops with SIGTERM', () => {
    const user = last('USER').args.split(':')[0];
    assert.ok(user !== 'root' && user !== '0', `USER ${user}`);
    const { command } = healthcheckOf(last('HEALTHCHECK'));
    assert.equal(command[0], 'node');
    assert.match(command.join(' '), /\/healthz/);
    assert.equal(last('STOPSIGNAL').args, 'SIGTERM');
  });

  test('the run stage holds no development dependency: it installs nothing, and takes node_modules from a stage that pruned them', () => {
    for (const { args } of instructionsOf(image, 'RUN')) {
      assert.doesNotMatch(args, /\b(npm|npx|yarn|pnpm|apt-get|apt)\b/, `RUN ${args} in the run stage`);
    }
    const copies = instructionsOf(image, 'COPY');
    for (const copy of copies) {
      assert.ok(copy.flags.from, `COPY ${copy.args} takes files from the build context, not from the build`);
    }
    const modules = copies.find((copy) => /\/node_modules\s/.test(`${copy.args} `));
    assert.ok(modules, 'no COPY of node_modules');
    const built = stages.find((stage) => stage.name === modules.flags.from);
    assert.ok(built, `no stage named ${modules.flags.from}`);
    const steps = instructionsOf(built, 'RUN').map((run) => run.args);
    const pruned = steps.findLastIndex((args) => /\bnpm prune\b.*--omit=dev\b/.test(args));
    const installed = steps.findLastIndex((args) => /\bnpm (ci|install|i)\b/.test(args));
    assert.ok(pruned >= 0 && pruned > installed, `the ${built.name} stage's last npm step is not npm prune --omit=dev`);
  });

  test('sets the allocator settings and V8 flags of src/start-settings.ts, so the service starts without a relaunch', () => {
    const { UV_THREADPOOL_SIZE: _machineDependent, ...fixed } = START_ENV;
    for (const [name, value] of Object.entries(fixed)) assert.equal(imageEnv[name], value, `ENV ${name}`);
    // One thread per core is the machine's to say: left unset in the image, and said in its comments.
    assert.equal(imageEnv.UV_THREADPOOL_SIZE, undefined);
    assert.match(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), /UV_THREADPOOL_SIZE/);
    assert.deepEqual(execForm(last('CMD').args), ['node', ...V8_FLAGS, 'dist/main.js']);
  });

  test('production, on all interfaces on the port it exposes, SQLite on a volume; with SECRET_KEY and Twilio set it starts, without them it says which', () => {
    assert.equal(imageEnv.NODE_ENV, 'production');
    assert.equal(imageEnv.HOST, '0.0.0.0');
    assert.equal(last('EXPOSE').args, imageEnv.PORT);
    const database = /^sqlite:(\/.+)$/.exec(imageEnv.DATABASE_URL ?? '');
    assert.ok(database?.[1], `DATABASE_URL ${imageEnv.DATABASE_URL} is not a SQLite file at an absolute path`);
    const volumes = last('VOLUME').args.split(/\s+/);
    assert.ok(volumes.includes(posix.dirname(database[1])), `the database's folder is not a VOLUME (${volumes})`);
    // The folder is made for the service's user: as root, a fresh volume would be read-only to it.
    const user = last('USER').args.split(':')[0] as string;
    const madeForUser = instructionsOf(image, 'RUN').some(
      (run) => run.args.includes(posix.dirname(database[1] as string)) && run.args.includes(user),
    );
    assert.ok(madeForUser, `no RUN gives ${posix.dirname(database[1])} to ${user}`);

    assert.doesNotThrow(() => loadConfig({ ...imageEnv, ...PRODUCTION_SETTINGS }));
    for (const variable of ['SECRET_KEY', 'SMS_PROVIDER', 'SMTP_URL']) {
      const { [variable as keyof typeof PRODUCTION_SETTINGS]: _left, ...rest } = PRODUCTION_SETTINGS;
      assert.throws(
        () => loadConfig({ ...imageEnv, ...rest }),
        (error) => error instanceof ConfigError && error.message.includes(variable),
      );
    }
  });
});

test('.dockerignore sends the build what it reads, and keeps out local state, secrets and what the image does not need', () => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
  const sent = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build.mjs', 'src/main.ts'];
  sent.push('src/store/migrations/index.ts', 'web/account/index.html', 'web/shared/style.css', 'web/tsconfig.json');
  for (const path of sent) assert.equal(isDockerIgnored(path, patterns), false, `${path} is left out`);
  const kept = ['node_modules/pg/package.json', 'dist/main.js', 'dist.1234/main.js', 'data/mfa.sqlite', 'mfa.sqlite'];
  kept.push('.git/config', '.env', '.env.production', 'docs/screenshots/sign-in-phone.png', 'test/http/oauth.test.ts');
  kept.push('bench/results/run.json', 'Dockerfile', 'compose.yaml');
  for (const path of kept) assert.equal(isDockerIgnored(path, patterns), true, `${path} is sent to the build`);
});

/** A compose service, as written or as `docker compose config` writes it out. */
interface ComposeService {
  build?: unknown;
  image?: string;
  environment?: Record<string, string | number | null> | string[];
  healthcheck?: { test?: string[] | string };
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: (string | number | { published?: string | number; target?: number })[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

function environmentOf(service: ComposeService): Record<string, string> {
  const raw = service.environment ?? {};
  const entries = Array.isArray(raw)
    ? raw.map((item) => [item.slice(0, item.indexOf('=')), item.slice(item.indexOf('=') + 1)])
    : Object.entries(raw).map(([name, value]) => [name, String(value ?? '')]);
  return Object.fromEntries(entries);
}

function portsOf(service: ComposeService): { published: string; target: string }[] {
  return (service.ports ?? []).map((port) => {
    if (typeof port === 'object') return { published: String(port.published), target: String(port.target) };
    const parts = String(port).split(':');
    return { published: parts.at(-2) ?? '', target: parts.at(-1) ?? '' };
  });
}

function conditionOn(service: ComposeService, dependency: string): string | undefined {
  const dependsOn = service.depends_on ?? {};
  if (Array.isArray(dependsOn)) return dependsOn.includes(dependency) ? 'service_started' : undefined;
  return dependsOn[dependency] ? (dependsOn[dependency].condition ?? 'service_started') : undefined;
}

function volumeSources(service: ComposeService): string[] {
  return (service.volumes ?? []).map((volume) =>
    typeof volume === 'string' ? (volume.split(':')[0] ?? '') : (volume.source ?? ''),
  );
}

/** The checks of compose.yaml, on the file as parsed or as Docker Compose resolves it. */
function checkCompose(compose: ComposeFile): void {
  const nodes = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
  assert.deepEqual(
    nodes.map(([name]) => name),
    ['mfa-1', 'mfa-2'],
    'two nodes built from the Dockerfile',
  );
  const [first, second] = nodes.map(([, service]) => environmentOf(service)) as [
    Record<string, string>,
    Record<string, string>,
  ];
  for (const name of ['DATABASE_URL', 'SECRET_KEY', 'ISSUER', 'ADMIN_TOKEN', 'SMS_PROVIDER']) {
    assert.ok(first[name], `mfa-1 has no ${name}`);
    assert.equal(second[name], first[name], `the nodes' ${name} differ`);
  }
  assert.deepEqual(second, first, "the nodes' settings differ");
  // The nodes start on these settings (the image's ENV below them).
  assert.doesNotThrow(() => loadConfig({ ...imageEnv, ...first }));

  const database = new URL(first.DATABASE_URL as string);
  assert.equal(database.protocol, 'postgres:');
  const postgres = compose.services[database.hostname];
  assert.ok(postgres, `DATABASE_URL names ${database.hostname}, which is not a service`);
  assert.match(postgres.image ?? '', /^postgres:(1[6-9]|[2-9]\d)\b/, 'PostgreSQL 16 or later');
  const postgresEnv = environmentOf(postgres);
  assert.equal(postgresEnv.POSTGRES_USER, database.username);
  assert.equal(postgresEnv.POSTGRES_PASSWORD, decodeURIComponent(database.password));
  assert.equal(postgresEnv.POSTGRES_DB, database.pathname.slice(1));
  assert.match([postgres.healthcheck?.test ?? []].flat().join(' '), /\bpg_isready\b/);
  const named = volumeSources(postgres).filter((source) => compose.volumes && source in compose.volumes);
  assert.equal(named.length, 1, "PostgreSQL's data is on a named volume");

  const dockerHealthcheck = healthcheckOf(last('HEALTHCHECK')).command;
  const published: string[] = [];
  for (const [name, service] of nodes) {
    assert.equal(conditionOn(service, database.hostname), 'service_healthy', `${name} waits for a healthy PostgreSQL`);
    assert.deepEqual(service.healthcheck?.test, ['CMD', ...dockerHealthcheck], `${name}'s healthcheck is the image's`);
    const ports = portsOf(service);
    assert.equal(ports.length, 1, `${name} publishes one port`);
    assert.equal(ports[0]?.target, imageEnv.PORT, `${name} publishes the port the image listens on`);
    published.push(ports[0]?.published ?? '');
  }
  assert.deepEqual(published, ['8001', '8002']);
}

const COMPOSE_FILE = join(ROOT, 'compose.yaml');

describe('compose.yaml', () => {
  test('runs two nodes with the same DATABASE_URL, SECRET_KEY and ISSUER, healthchecks on /healthz, once PostgreSQL (checked by pg_isready, on a named volume) is healthy', () => {
    // Merge keys (<<) as Docker Compose reads them; parse() throws on any YAML error.
    checkCompose(parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as ComposeFile);
  });

  test('is valid for Docker Compose, and says the same once Compose resolves it', async (t) => {
    const run = promisify(execFile);
    // Without its plugin, `docker compose …` is docker's own command line refusing "compose".
    const installed = await run('docker', ['compose', 'version'], { timeout: 30_000 }).then(
      () => true,
      () => false,
    );
    if (!installed) {
      t.skip('Docker Compose is not installed here: compose.yaml was checked with the yaml package only');
      return;
    }
    const { stdout: resolved } = await run('docker', ['compose', '-f', COMPOSE_FILE, 'config', '--format', 'json'], {
      cwd: ROOT,
      timeout: 30_000,
    });
    checkCompose(JSON.parse(resolved) as ComposeFile);
  });
});
