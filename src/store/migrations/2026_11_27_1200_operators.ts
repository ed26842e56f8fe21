import type { Kysely } from 'kysely';

// Issue 30: operators are accounts (`npm run admin -- grant-operator USER`), who use the admin API
// with their own access token (a second factor, fresh for changes) instead of the shared ADMIN_TOKEN.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('user')
    .addColumn('is_operator', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('is_operator').execute();
}
