import { type Config, ConfigError, loadConfig } from './config.js';
import type { Tracing } from './tracing.js';

// The service: configuration, database, migrations, the app, listening, graceful shutdown. Loaded
// by main.ts once the start settings are in place (start-settings.ts).

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
const { startTracing } = await import('./tracing.js');

function messageOf(error: unknown): string {
  return (error as { message?: string }).message ?? String(error);
}

/** Why the database cannot be used, naming DATABASE_URL (without its password). */
function databaseFailure(error: unknown): string {
  const where = config.databaseUrl.replace(/\/\/[^@/]*@/, '//');
  return `DATABASE_URL ${where} cannot be used: ${messageOf(error)}; set DATABASE_URL to a database this service can open`;
}

/** Why the service cannot listen, naming HOST or PORT. */
function listenFailure(error: unknown): string {
  const { host, port } = config;
  switch ((error as { code?: string }).code) {
    case 'EADDRINUSE':
      return `PORT ${port} on ${host} is already in use; stop the other server or set PORT`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine; set HOST`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST ${host} does not resolve to an address; set HOST to an address of this machine (e.g. 0.0.0.0)`;
    case 'EACCES':
      return `cannot listen on ${host}:${port} (permission denied); set PORT above 1023`;
    default:
      return `cannot listen on HOST ${host}, PORT ${port}: ${messageOf(error)}; set HOST and PORT`;
  }
}

let app: Awaited<ReturnType<typeof buildApp>>;
let db: Awaited<ReturnType<typeof openDatabase>>['db'] | undefined;
let tracing: Tracing | undefined;
// What stops start-up is told in one line naming the setting to change, instead of a stack trace.
let explain = databaseFailure;
try {
  explain = (error) => `OpenTelemetry could not start: ${messageOf(error)}`;
  tracing = await startTracing(process.env);
  explain = databaseFailure;
  ({ db } = await openDatabase(config.databaseUrl, config.databasePool, { traced: tracing !== undefined }));
  await migrateToLatest(db);
  explain = messageOf;
  app = await buildApp(config, { db, tracing });
  explain = listenFailure;
  await app.listen({ port: config.port, host: config.host });
} catch (error) {
  process.stderr.write(`start-up failed: ${explain(error)}\n`);
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
  await tracing?.shutdown().catch(() => {});
  process.exit(0);
}
process.on('SIGTERM', shutDown);
process.on('SIGINT', shutDown);
// Started by a launcher (start-settings.ts): when it ends, even killed outright, the service stops too.
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => shutDown('disconnect'));
}
