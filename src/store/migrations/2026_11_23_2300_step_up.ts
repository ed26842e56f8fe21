import type { Kysely } from 'kysely';

// Issue 14: clients that want the mfa_token challenge, and the tokens themselves.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('oauth_client')
    .addColumn('mfa_challenge', 'text', (column) => column.notNull().defaultTo('seed'))
    .execute();

  await db.schema
    .createTable('mfa_token')
    .addColumn('token_hash', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (column) => column.notNull())
    .addColumn('required_acr', 'text', (column) => column.notNull())
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mfa_token').execute();
  await db.schema.alterTable('oauth_client').dropColumn('mfa_challenge').execute();
}
