import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The service as `npm start` runs it: the compiled dist/main.js (`npm run build` makes it; `npm test` builds first). */
export const SERVICE_MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
if (!existsSync(SERVICE_MAIN)) throw new Error(`${SERVICE_MAIN} is missing: run npm run build first`);

/** A free TCP port on 127.0.0.1 (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /** Sends the signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs the service in its own process, as `npm start` does, with exactly the environment given
 * (plus PATH and HOME) and a free PORT; resolves once it answers HTTP.
 */
export async function startServiceProcess(env: Record<string, string>, cwd?: string): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVICE_MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  await untilAnswering(child, `${url}/mfa/`, () => output);
  return {
    url,
    child,
    output: () => output,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Waits until `url` answers HTTP (any status); throws with the process's `output` if it exits first
 * or does not answer within 30 s (then it is killed).
 */
export async function untilAnswering(child: ChildProcess, url: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${child.spawnargs.join(' ')} exited with ${child.exitCode}: ${output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`${child.spawnargs.join(' ')} did not answer within 30 s: ${output()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
