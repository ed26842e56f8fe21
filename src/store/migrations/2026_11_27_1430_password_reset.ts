import { type Kysely, sql } from 'kysely';

// CONTRACT §20, "forgot password": a link mailed to the user's verified address sets a new
// password. One link per user, kept only as its keyed hash (found by it: unique); a new request
// replaces the earlier link. The link is spent by an UPDATE guarded on `used_at`, so of two uses
// racing exactly one succeeds. `email` is where it went: an address changed since kills it.
// A reset asked for by address finds its accounts through an index on the folded address, so that
// the unauthenticated call never reads the whole user table.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('password_reset')
    .addColumn('user_id', 'text', (column) => column.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('user_email_folded').on('user').expression(sql`lower(email)`).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('user_email_folded').execute();
  await db.schema.dropTable('password_reset').execute();
}
