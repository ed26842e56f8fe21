import type { Kysely } from 'kysely';

// Issue 33: the retention clean-up ran inside whichever request wrote the hour's first audit
// event, and its delete of finished webhook deliveries scanned the whole table. It now runs on a
// timer, once an hour among all nodes (the one that claims `scheduled_job`'s row), in small
// batches, each read from an index on time (the outbox of mail and SMS is pruned with them).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('scheduled_job')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('due_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('webhook_delivery_created').on('webhook_delivery').column('created_at').execute();
  await db.schema.createIndex('outbox_message_created').on('outbox_message').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_message_created').execute();
  await db.schema.dropIndex('webhook_delivery_created').execute();
  await db.schema.dropTable('scheduled_job').execute();
}
