import { type Kysely, Migrator, PostgresAdapter, sql } from 'kysely';
import type { Database } from './database.js';
import { migrations } from './migrations/index.js';

/** Brings the schema up to date; safe when several nodes start at once (the migrator locks). */
export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const { error, results } = await (await migratorFor(db)).migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/** Throws unless the database answers and every known migration has run (for readiness checks). */
export async function checkSchemaIsCurrent(db: Kysely<Database>): Promise<void> {
  const known = await (await migratorFor(db)).getMigrations();
  const pending = known.filter((migration) => migration.executedAt === undefined);
  if (pending.length > 0) throw new Error(`${pending.length} migration(s) have not run`);
}

/**
 * On PostgreSQL the migrator is pinned to the connection's current schema: left to itself, Kysely
 * looks for its migration tables in every schema of the database, so another schema's copy
 * (another deployment sharing the database) would make it skip creating its own.
 */
async function migratorFor(db: Kysely<Database>): Promise<Migrator> {
  const provider = { getMigrations: async () => migrations };
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return new Migrator({ db, provider });
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return new Migrator({ db, provider, migrationTableSchema: rows[0]?.schema });
}
