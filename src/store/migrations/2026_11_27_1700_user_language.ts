import type { Kysely } from 'kysely';

// CONTRACT §22: the user's stored language, which texts follow when the request that causes them
// gives no ui_locales: an ISO 639-1 code of a shipped language, or null to follow the browser.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').addColumn('language', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('language').execute();
}
