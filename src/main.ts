import { type Config, ConfigError, loadConfig } from './config.js';
import { relaunchWithStartSettings } from './start-settings.js';

// First of all: the allocator's, thread pool's and heap's settings take effect only in a new
// process (start-settings.ts). When one is started, it serves, and this one only waits for it.
const relaunched = relaunchWithStartSettings();
if (relaunched) await relaunched;

let config: Config;
try {
  config = loadConfig(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`configuration error: ${error.message}\n`);
  process.exit(1);
}

// Loaded after the configuration is known good, so a bad setting is reported at once.
const { buildApp } = await import('./app.js');
const { openDatabase } = await import('./store/database.js');
const { migrateToLatest } = await import('./store/migrate.js');

/** One line for what stops start-up (the database, the port, the keys), instead of a stack trace. */
function startupFailure(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'EADDRINUSE')
    return `PORT ${config.port} on ${config.host} is already in use; stop the other server or set PORT`;
  if (code === 'EADDRNOTAVAIL') return `HOST ${config.host} is not an address of this machine; set HOST`;
  if (code === 'EACCES')
    return `cannot listen on ${config.host}:${config.port} (permission denied); set PORT above 1023`;
  const where = config.databaseUrl.replace(/\/\/[^@/]*@/, '//');
  if (
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'ETIMEDOUT' ||
    code?.startsWith('28') ||
    code === '3D000'
  ) {
    return `DATABASE_URL ${where} cannot be used: ${message ?? code}`;
  }
  if (code === 'SQLITE_CANTOPEN' || code === 'EACCES' || code === 'ENOENT') {
    return `DATABASE_URL ${where} cannot be opened: ${message ?? code}`;
  }
  return message ?? String(error);
}

let app: Awaited<ReturnType<typeof buildApp>>;
let db: Awaited<ReturnType<typeof openDatabase>>['db'] | undefined;
try {
  ({ db } = await openDatabase(config.databaseUrl, config.databasePool));
  await migrateToLatest(db);
  app = await buildApp(config, { db });
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  process.stderr.write(`start-up failed: ${startupFailure(error)}\n`);
  await db?.destroy().catch(() => {});
  process.exit(1);
}

let shuttingDown = false;
async function shutDown(signal: string) {
  // A terminal's Ctrl-C reaches both the launcher, which passes it on, and the service: stop once.
  if (shuttingDown) return;
  shuttingDown = true;
  app.log.info({ signal }, 'shutting down: finishing requests in flight');
  // close() ends the connections idle when it starts; a keep-alive connection whose request is
  // still in flight goes idle later and would hold the exit until its timeout. Sweep those too.
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 100);
  await app.close();
  clearInterval(sweeper);
  await db?.destroy();
  process.exit(0);
}
process.on('SIGTERM', shutDown);
process.on('SIGINT', shutDown);
// Started by a launcher (start-settings.ts): when it ends, even killed outright, the service stops too.
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => shutDown('disconnect'));
}
