import type { Kysely } from 'kysely';

// Issue 16: webhook endpoints, the outbox of their deliveries, and every attempt made.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoint')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('url', 'text', (column) => column.notNull())
    .addColumn('events', 'text', (column) => column.notNull())
    .addColumn('sealed_secret', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('webhook_delivery')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('endpoint_id', 'text', (column) =>
      column.notNull().references('webhook_endpoint.id').onDelete('cascade'),
    )
    .addColumn('event_type', 'text', (column) => column.notNull())
    .addColumn('payload', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('due_at', 'text', (column) => column.notNull())
    .addColumn('lease_id', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('webhook_delivery_due').on('webhook_delivery').columns(['status', 'due_at']).execute();
  await db.schema
    .createIndex('webhook_delivery_endpoint')
    .on('webhook_delivery')
    .columns(['endpoint_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('webhook_attempt')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('delivery_id', 'text', (column) =>
      column.notNull().references('webhook_delivery.id').onDelete('cascade'),
    )
    .addColumn('attempt', 'integer', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('attempted_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempt_delivery').on('webhook_attempt').columns(['delivery_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_attempt').execute();
  await db.schema.dropTable('webhook_delivery').execute();
  await db.schema.dropTable('webhook_endpoint').execute();
}
