import { spawn } from 'node:child_process';
import { availableParallelism, constants } from 'node:os';

/**
 * glibc's allocator, libuv's thread pool and V8's heap read their settings only when a process
 * starts, so they are set here, where the service starts, whether by `npm start` or
 * `node dist/main.js` in an image: fewer malloc arenas, freed blocks of 1 MiB and more given back
 * to the system at once, transparent huge pages for the heap, and a 2 MiB young generation instead
 * of 16 took the peak memory of the benchmark from 182 to 154 MB. V8's old generation may grow to
 * 1.25 times what its last full collection kept, instead of up to 4 times under load: with that
 * freedom its heap had reached 70 MB in some runs (peaks of 176–189 MB); at 1.5 times it still
 * grew from 38 MB live to 51–60 MB through a bench run, and 1.25 took the service's peak from 161 to
 * 153 MB. Neither bound cost measurable CPU per request. A thread pool of one thread per core instead of 4: Argon2, its main
 * user, runs on as many threads as there are cores at most (crypto/passwords.ts), and on spare
 * threads the same hashes ran slower, 140–150 logins/s against 166–175 on two cores. Figures in
 * docs/PERFORMANCE.md. These variables are the C library's, libuv's and V8's, not the service's
 * configuration: config.ts does not know them. The Dockerfile sets the same in its image (all but
 * UV_THREADPOOL_SIZE, which depends on the machine), so the service starts there without a
 * relaunch; test/container/ checks that the two agree.
 */
export const START_ENV: Record<string, string> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '1048576',
  MALLOC_TRIM_THRESHOLD_: '1048576',
  GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1',
  UV_THREADPOOL_SIZE: String(availableParallelism()),
};
export const V8_FLAGS = ['--max-semi-space-size=2', '--heap-growing-percent=25'];

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * Starts the service again with these settings, once: undefined when they are already in
 * place (MALLOC_ARENA_MAX set, by this function or by the operator, who then chooses them all) or
 * the system is not Linux. Node 22.15 and later replace this process (execve); Node 20 has no
 * execve, so this process stays as a launcher that passes signals on, ends with the service's exit
 * code, and is watched by the service through an IPC channel, which ends with it. It has loaded
 * nothing but this module (main.ts imports the service only where it serves), so it holds what any
 * Node process holds: about 7.5 MB of its own memory, the rest (43 MB resident) Node's binary and
 * libraries, whose pages the service shares (docs/PERFORMANCE.md).
 */
export function relaunchWithStartSettings(): Promise<never> | undefined {
  if (process.platform !== 'linux' || process.env.MALLOC_ARENA_MAX !== undefined) return undefined;
  const args = [...V8_FLAGS, ...process.execArgv, ...process.argv.slice(1)];
  // Whatever else of these the operator set is kept.
  const env = { ...START_ENV, ...process.env };
  const execve = (process as { execve?: Execve }).execve;
  if (execve) execve(process.execPath, [process.execPath, ...args], env);
  const service = spawn(process.execPath, args, { env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
  service.once('error', (error) => {
    process.stderr.write(`start-up failed: cannot start ${process.execPath}: ${error.message}\n`);
    process.exit(1);
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => service.kill(signal));
  }
  return new Promise<never>(() => {
    service.once('exit', (code, signal) => {
      process.exit(code ?? (signal ? 128 + constants.signals[signal] : 1));
    });
  });
}
