import { type Kysely, sql } from 'kysely';

const WITH_PROOF = ['refresh_token', 'sign_in_session', 'authorization_code', 'authorization_interaction'] as const;
/** The interaction has a proof only once its password step passed. */
const PROOF_OPTIONAL: readonly string[] = ['authorization_interaction'];

// Issue 28, "Remember this device": a browser a person chose to remember skips the second step at
// the hosted sign-in; its device token is stored hashed, bound to the user and to their session
// generation (so CONTRACT §14's changes forget every device at once). Such a sign-in proves the
// password and names the method the device was first proved with (amr), yet reaches only aal2: so
// where a login's amr is kept, its acr is kept beside it instead of being derived from the amr.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('oauth_client')
    .addColumn('remember_device_days', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  for (const table of WITH_PROOF) {
    await db.schema
      .alterTable(table)
      .addColumn('acr', 'text', (column) =>
        PROOF_OPTIONAL.includes(table) ? column : column.notNull().defaultTo('aal1'),
      )
      .execute();
    // What every login so far reached: derived from its methods (a passkey is phishing-resistant).
    await db
      .updateTable(table)
      .set({
        acr: sql`case when amr like '%"hwk"%' then 'phr' when amr = '["pwd"]' then 'aal1' else 'aal2' end`,
      })
      .where('amr', 'is not', null)
      .execute();
  }
  await db.schema
    .createTable('remembered_device')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('session_generation', 'integer', (column) => column.notNull())
    .addColumn('amr', 'text', (column) => column.notNull())
    .addColumn('browser', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('last_used_at', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('remembered_device_user').on('remembered_device').column('user_id').execute();
  await db.schema.createIndex('remembered_device_expiry').on('remembered_device').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('remembered_device').execute();
  for (const table of WITH_PROOF) await db.schema.alterTable(table).dropColumn('acr').execute();
  await db.schema.alterTable('oauth_client').dropColumn('remember_device_days').execute();
}
