import type { Kysely } from 'kysely';

// Issue 13: WebAuthn challenges, spent like one-time codes. Passkeys themselves are mfa_factor rows.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webauthn_challenge')
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (column) => column.notNull())
    .addColumn('challenge_hash', 'text', (column) => column.notNull())
    .addColumn('pending_name', 'text')
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addPrimaryKeyConstraint('webauthn_challenge_pk', ['user_id', 'purpose'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webauthn_challenge').execute();
}
