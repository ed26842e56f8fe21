import { type Kysely, sql } from 'kysely';

// Issue 12: every second factor in one table. Today's `mfa` rows (one SMS enrolment per user)
// become `mfa_factor` rows, and the time MFA was turned on moves to the user.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mfa_factor')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('is_default', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('verified_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('phone_number', 'text')
    .addColumn('sealed_secret', 'text')
    .addColumn('data', 'text')
    .addColumn('counter', 'bigint')
    .execute();
  await db.schema.createIndex('mfa_factor_user').on('mfa_factor').columns(['user_id', 'type']).execute();

  await db.schema.alterTable('user').addColumn('mfa_enabled_at', 'text').execute();

  await sql`
    insert into mfa_factor (id, user_id, type, name, is_default, status, created_at, verified_at, phone_number)
    select 'sms-' || user_id, user_id, 'sms', 'SMS', enabled, case when enabled = 1 then 'verified' else 'pending' end,
      coalesce(enabled_at, '1970-01-01T00:00:00.000Z'), enabled_at, phone_number
    from mfa where phone_number is not null`.execute(db);
  await sql`
    update ${sql.table('user')} set mfa_enabled_at =
      (select enabled_at from mfa where mfa.user_id = ${sql.table('user')}.id and mfa.enabled = 1)`.execute(db);
  await db.schema.dropTable('mfa').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mfa')
    .addColumn('user_id', 'text', (column) => column.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('enabled', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('phone_number', 'text')
    .addColumn('enabled_at', 'text')
    .execute();
  await sql`
    insert into mfa (user_id, enabled, phone_number, enabled_at)
    select user_id, case when status = 'verified' then 1 else 0 end, phone_number, verified_at
    from mfa_factor where type = 'sms'`.execute(db);
  await db.schema.alterTable('user').dropColumn('mfa_enabled_at').execute();
  await db.schema.dropTable('mfa_factor').execute();
}
