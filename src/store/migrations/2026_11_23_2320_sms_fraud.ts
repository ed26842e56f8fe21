import type { Kysely } from 'kysely';

// Issue 15: SMS fraud defence. The per-country and per-range budgets count in `sms_counter`
// (country counters are kept 7 days, for the anomaly pause's average); the pauses live here.
export async function up(db: Kysely<any>): Promise<void> {
  // One row per country (ISO code, or `+881` for a network of no country): its latest pause.
  await db.schema
    .createTable('sms_country_pause')
    .addColumn('country', 'text', (column) => column.primaryKey())
    .addColumn('paused_at', 'text', (column) => column.notNull())
    .addColumn('paused_until', 'text', (column) => column.notNull())
    .addColumn('resumed_at', 'text')
    .addColumn('sends', 'integer', (column) => column.notNull())
    .addColumn('threshold', 'integer', (column) => column.notNull())
    .execute();
  // Old windows of every scope are deleted together, by time.
  await db.schema.createIndex('sms_counter_window').on('sms_counter').column('window_start').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sms_counter_window').execute();
  await db.schema.dropTable('sms_country_pause').execute();
}
