import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The admin CLI as the README runs it (npm run admin -- …), or straight from the build as npm does.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN = fileURLToPath(new URL('../../dist/cli/admin.js', import.meta.url));

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `admin <args>` in its own process on `databaseUrl`, with only PATH, HOME and DATABASE_URL
 * set (and `env`), and `stdin` piped in.
 */
export function runAdmin(
  databaseUrl: string,
  args: string[],
  options: { stdin?: string; env?: Record<string, string>; viaNpm?: boolean } = {},
): Promise<AdminRun> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: databaseUrl, ...options.env };
  const child = options.viaNpm
    ? spawn('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env })
    : spawn(process.execPath, [ADMIN, ...args], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.end(options.stdin ?? '');
  return new Promise<AdminRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs `admin <args>` in a terminal of its own (util-linux `script` gives it a pseudo-terminal), and
 * types `typed` once the password prompt shows. Resolves with everything the terminal showed.
 */
export function runAdminInTerminal(databaseUrl: string, args: string[], typed: string): Promise<AdminRun> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: databaseUrl };
  const command = [process.execPath, ADMIN, ...args].map((word) => `'${word}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const hadPrompt = stdout.includes('password');
    stdout += chunk;
    if (!hadPrompt && stdout.includes('password')) child.stdin.write(typed);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise<AdminRun>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Whether `script` (util-linux), which runAdminInTerminal needs, is installed. */
export const hasScript = spawnSync('script', ['--version']).status === 0;
