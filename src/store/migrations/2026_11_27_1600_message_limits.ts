import type { Kysely } from 'kysely';

// CONTRACT §20, limits on what the outbox sends. A sign-in throttled is told to the owner at most
// once a day, so that anyone who knows a username cannot fill the owner's mailbox: when the last
// such notice was queued. A message that is of no use after a time (an email code's mail, once
// the code has expired) is given up then, not retried for 24 hours.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').addColumn('throttle_noticed_at', 'text').execute();
  await db.schema.alterTable('outbox_message').addColumn('expires_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox_message').dropColumn('expires_at').execute();
  await db.schema.alterTable('user').dropColumn('throttle_noticed_at').execute();
}
