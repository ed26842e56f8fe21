import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_code')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addUniqueConstraint('backup_code_user_hash', ['user_id', 'code_hash'])
    .execute();

  await db.schema
    .createTable('login_throttle')
    .addColumn('scope', 'text', (column) => column.primaryKey())
    .addColumn('failures', 'integer', (column) => column.notNull())
    .addColumn('last_failure_at', 'text', (column) => column.notNull())
    .addColumn('blocked_until', 'text')
    .execute();

  await db.schema
    .createTable('security_event')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('occurred_at', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text')
    .addColumn('client_address', 'text')
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('outcome', 'text', (column) => column.notNull())
    .addColumn('detail', 'text')
    .execute();
  await db.schema.createIndex('security_event_user').on('security_event').columns(['user_id', 'occurred_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('security_event').execute();
  await db.schema.dropTable('login_throttle').execute();
  await db.schema.dropTable('backup_code').execute();
}
