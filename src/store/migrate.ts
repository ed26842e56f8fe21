import { DEFAULT_MIGRATION_TABLE, type Kysely, type MigrationResultSet, Migrator, PostgresAdapter, sql } from 'kysely';
import type { Database } from './database.js';
import { migrations } from './migrations/index.js';

/**
 * Brings the schema up to date; safe when several nodes start at once (the migrator locks). A
 * schema that a newer build migrated further is left as it is: Kysely's migrator refuses to run
 * beside migrations it does not know, and a node of the previous build must still start during a
 * rolling upgrade or a rollback (README: "Migrations and running nodes").
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  if ((await pendingMigrations(db).catch(() => undefined))?.length === 0) return;
  return migrate(db, (migrator) => migrator.migrateToLatest());
}

/** Migrates up to and including the migration `name`: a database of that version (for tests of upgrades). */
export function migrateTo(db: Kysely<Database>, name: string): Promise<void> {
  return migrate(db, (migrator) => migrator.migrateTo(name));
}

async function migrate(db: Kysely<Database>, run: (migrator: Migrator) => Promise<MigrationResultSet>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await run(await migratorFor(db));
    const failed = results?.find((result) => result.status === 'Error');
    if (!error && !failed) return;
    // Before migrating, Kysely lists the tables of every schema, a scan PostgreSQL fails ("schema …
    // does not exist") when another schema of the database is dropped meanwhile. No migration ran
    // then, so it is tried again.
    if (attempt < 5 && results === undefined && /does not exist/.test(String(error))) continue;
    // Nothing ran: the database could not be reached or read; its own error says why.
    if (results === undefined && error instanceof Error) throw error;
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/**
 * Throws unless the database answers and every known migration has run (for readiness checks).
 * One read of the migration table: the migrator's own check introspects every schema's catalog,
 * which is slow and fails while another schema of the database is dropping tables.
 */
export async function checkSchemaIsCurrent(db: Kysely<Database>): Promise<void> {
  const pending = await pendingMigrations(db);
  if (pending.length > 0) throw new Error(`${pending.length} migration(s) have not run`);
}

/** This build's migrations that have not run; throws while there is no migration table. */
async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(db);
  const done = new Set(rows.map((row) => row.name));
  return Object.keys(migrations).filter((name) => !done.has(name));
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
