import type { Kysely } from 'kysely';

// CONTRACT §16 and §20: every mail and SMS the service sends on its own (a code, a security notice)
// is a row of `outbox_message`, written in the transaction of the change that causes it, and sent
// by a worker on any node: retried, never lost, each attempt made by one node (a lease, as for
// webhook deliveries). The message (address, subject, text) is sealed and blanked once done.
// `recovery_request`: the one recovery request of a user (CONTRACT §20), waiting, cancelled or
// completed; a new one replaces a finished one.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('outbox_message')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('channel', 'text', (column) => column.notNull())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text')
    .addColumn('sealed_message', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('due_at', 'text', (column) => column.notNull())
    .addColumn('lease_id', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('outbox_message_due').on('outbox_message').columns(['status', 'due_at']).execute();
  await db.schema
    .createTable('recovery_request')
    .addColumn('user_id', 'text', (column) => column.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('id', 'text', (column) => column.notNull().unique())
    .addColumn('state', 'text', (column) => column.notNull())
    .addColumn('ready_at', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('ended_at', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recovery_request').execute();
  await db.schema.dropTable('outbox_message').execute();
}
