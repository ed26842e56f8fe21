import type { Kysely } from 'kysely';

// Issue 28: accounts without a password get in through a one-time invite (stored hashed); a passkey
// sign-in without a username answers a signed challenge, recorded here once used (single use). And
// a sign-in started from a browser's sign-in session remembers it: it ends when that session ends.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('authorization_interaction').addColumn('sign_in_session_id', 'text').execute();
  await db.schema
    .createTable('invite')
    .addColumn('token_hash', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('invite_user').on('invite').column('user_id').execute();

  await db.schema
    .createTable('passkey_sign_in_challenge')
    .addColumn('challenge_hash', 'text', (column) => column.primaryKey())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema
    .createIndex('passkey_sign_in_challenge_expiry')
    .on('passkey_sign_in_challenge')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('passkey_sign_in_challenge').execute();
  await db.schema.dropTable('invite').execute();
  await db.schema.alterTable('authorization_interaction').dropColumn('sign_in_session_id').execute();
}
