import { type Kysely, Migrator } from 'kysely';
import type { Database } from './database.js';
import { migrations } from './migrations/index.js';

/** Brings the schema up to date; safe when several nodes start at once (the migrator locks). */
export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/** Throws unless the database answers and every known migration has run (for readiness checks). */
export async function checkSchemaIsCurrent(db: Kysely<Database>): Promise<void> {
  const known = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).getMigrations();
  const pending = known.filter((migration) => migration.executedAt === undefined);
  if (pending.length > 0) throw new Error(`${pending.length} migration(s) have not run`);
}
