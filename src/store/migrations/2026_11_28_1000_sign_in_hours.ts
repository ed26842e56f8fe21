import type { Kysely } from 'kysely';

// Issue 33: the console's sign-ins per hour counted a week of login events on every request (about
// 700 000 rows at ten million audit rows). An hour that has ended no longer changes, so its counts
// are kept here once counted, and a request counts only the hours that have not settled yet.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sign_in_hour')
    .addColumn('hour', 'text', (column) => column.primaryKey())
    .addColumn('logins', 'integer', (column) => column.notNull())
    .addColumn('succeeded', 'integer', (column) => column.notNull())
    .addColumn('refused', 'integer', (column) => column.notNull())
    .addColumn('throttled', 'integer', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sign_in_hour').execute();
}
