import { type Kysely, sql } from 'kysely';

// Issue 11: usernames compared without case, throttle blocks noted once, codes tied to their cooldown.
export async function up(db: Kysely<any>): Promise<void> {
  // The folded username is what must be unique. Accounts made before, that differ only in case,
  // keep working under their exact spelling: the oldest takes the folded name, the others a key
  // of their own.
  await db.schema.alterTable('user').addColumn('username_key', 'text').execute();
  await sql`update ${sql.table('user')} set username_key = lower(username)`.execute(db);
  await sql`
    update ${sql.table('user')} set username_key = lower(username) || ':' || id
    where exists (
      select 1 from ${sql.table('user')} as older
      where lower(older.username) = lower(${sql.table('user')}.username)
        and (older.created_at < ${sql.table('user')}.created_at
          or (older.created_at = ${sql.table('user')}.created_at and older.id < ${sql.table('user')}.id))
    )`.execute(db);
  await db.schema.createIndex('user_folded_username').on('user').column('username_key').unique().execute();

  // The block whose first refused attempt was written to the audit trail (one row per block).
  await db.schema.alterTable('login_throttle').addColumn('noted_block_until', 'text').execute();

  // The cooldown slot the code's SMS took: spending or killing the code gives the slot back.
  await db.schema.alterTable('one_time_code').addColumn('reservation_id', 'text').execute();

  await db.schema.createIndex('security_event_time').on('security_event').column('occurred_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('security_event_time').execute();
  await db.schema.alterTable('one_time_code').dropColumn('reservation_id').execute();
  await db.schema.alterTable('login_throttle').dropColumn('noted_block_until').execute();
  await db.schema.dropIndex('user_folded_username').execute();
  await db.schema.alterTable('user').dropColumn('username_key').execute();
}
