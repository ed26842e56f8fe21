import { type Config, ConfigError, loadConfig } from './config.js';

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

const { db } = await openDatabase(config.databaseUrl, config.databasePool);
await migrateToLatest(db);
const app = await buildApp(config, { db });
await app.listen({ port: config.port, host: config.host });

async function shutDown(signal: string) {
  app.log.info({ signal }, 'shutting down: finishing requests in flight');
  // close() ends the connections idle when it starts; a keep-alive connection whose request is
  // still in flight goes idle later and would hold the exit until its timeout. Sweep those too.
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 100);
  await app.close();
  clearInterval(sweeper);
  await db.destroy();
  process.exit(0);
}
process.once('SIGTERM', shutDown);
process.once('SIGINT', shutDown);
