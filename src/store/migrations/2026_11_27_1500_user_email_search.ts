import { type Kysely, sql } from 'kysely';

// CONTRACT §21: the operators' console finds users by the start of their email address, in any
// case, a page at a time: an index on the folded address serves the range and the order.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('user_email_key').on('user').expression(sql`lower(email)`).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('user_email_key').execute();
}
