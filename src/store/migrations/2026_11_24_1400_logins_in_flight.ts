import type { Kysely } from 'kysely';

// Review, seventh session: logins in flight while a user's second factors change.
export async function up(db: Kysely<any>): Promise<void> {
  // Counts the times every login of the user was ended (CONTRACT §14): a login that read the user
  // before the last of them may not start a refresh-token family.
  await db.schema
    .alterTable('user')
    .addColumn('session_generation', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('session_generation').execute();
}
