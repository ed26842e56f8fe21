import type { Kysely } from 'kysely';

// CONTRACT §20, email as a channel: a user may have one address, which counts once a 6-digit code
// sent to it comes back (`email_verified_at`), or at once when an operator gives it. The code
// waiting for an address is stored keyed-hashed, one per user; a new request replaces it, no
// sooner than the resend cooldown after the last while that one is alive.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').addColumn('email', 'text').execute();
  await db.schema.alterTable('user').addColumn('email_verified_at', 'text').execute();
  await db.schema
    .createTable('email_code')
    .addColumn('user_id', 'text', (column) => column.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('id', 'text', (column) => column.notNull().unique())
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('email_code').execute();
  await db.schema.alterTable('user').dropColumn('email_verified_at').execute();
  await db.schema.alterTable('user').dropColumn('email').execute();
}
