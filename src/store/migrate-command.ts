// `npm run migrate`: brings DATABASE_URL's schema up to date without starting the service.
import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';

try {
  const config = loadConfig(process.env);
  const { db } = await openDatabase(config.databaseUrl, config.databasePool);
  await migrateToLatest(db);
  await db.destroy();
  process.stdout.write('migrations are up to date\n');
} catch (error) {
  process.stderr.write(
    `${error instanceof ConfigError ? 'configuration error' : 'migration failed'}: ${String(error instanceof Error ? error.message : error)}\n`,
  );
  process.exit(1);
}
