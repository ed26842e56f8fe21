import type { Kysely } from 'kysely';

// Dialect-neutral on purpose: text and integer columns only, times as ISO-8601 text.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('username', 'text', (column) => column.notNull().unique())
    .addColumn('password_hash', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('oauth_client')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('secret_hash', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('mfa')
    .addColumn('user_id', 'text', (column) => column.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('enabled', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('phone_number', 'text')
    .addColumn('enabled_at', 'text')
    .execute();

  await db.schema
    .createTable('one_time_code')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (column) => column.notNull())
    .addColumn('phone_number', 'text', (column) => column.notNull())
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addUniqueConstraint('one_time_code_user_purpose', ['user_id', 'purpose'])
    .execute();

  await db.schema
    .createTable('sms_cooldown')
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (column) => column.notNull())
    .addColumn('sent_at', 'text', (column) => column.notNull())
    .addColumn('reservation_id', 'text', (column) => column.notNull())
    .addPrimaryKeyConstraint('sms_cooldown_pk', ['user_id', 'purpose'])
    .execute();

  await db.schema
    .createTable('sms_counter')
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('window_start', 'text', (column) => column.notNull())
    .addColumn('sends', 'integer', (column) => column.notNull())
    .addPrimaryKeyConstraint('sms_counter_pk', ['scope', 'window_start'])
    .execute();

  await db.schema
    .createTable('refresh_token')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('family_id', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (column) => column.notNull())
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('amr', 'text', (column) => column.notNull())
    .addColumn('auth_time', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('refresh_token_family').on('refresh_token').column('family_id').execute();

  await db.schema
    .createTable('signing_key')
    .addColumn('kid', 'text', (column) => column.primaryKey())
    .addColumn('alg', 'text', (column) => column.notNull())
    .addColumn('public_jwk', 'text', (column) => column.notNull())
    .addColumn('private_jwk', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('revoked_token')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('service_secret')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('value', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'service_secret',
    'revoked_token',
    'signing_key',
    'refresh_token',
    'sms_counter',
    'sms_cooldown',
    'one_time_code',
    'mfa',
    'oauth_client',
    'user',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
