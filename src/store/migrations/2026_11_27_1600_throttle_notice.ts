import type { Kysely } from 'kysely';

// CONTRACT §20, a sign-in throttled is told to the owner: at most once a day, so that anyone who
// knows a username cannot fill the owner's mailbox. When the last such notice was queued.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').addColumn('throttle_noticed_at', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('throttle_noticed_at').execute();
}
