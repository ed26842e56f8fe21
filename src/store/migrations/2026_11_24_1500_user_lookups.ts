import { type Kysely, sql } from 'kysely';

// Review, seventh session: one pending enrolment per user and type; the users' refresh tokens and mfa_tokens found by user (revoking every
// login of a user, deleting a user) and by expiry (the hourly prune), and the folded usernames of accounts that nodes older than
// 2026_11_23_2100_hardening made while the schema was already newer.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('refresh_token_user').on('refresh_token').column('user_id').execute();
  await db.schema.createIndex('mfa_token_user').on('mfa_token').column('user_id').execute();
  // One pending enrolment per user and type (replacePendingFactor upserts on it); of duplicates left
  // by enrolments that raced before, the newest stays.
  await db
    .deleteFrom('mfa_factor as f')
    .where('f.status', '=', 'pending')
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('mfa_factor as newer')
          .select('newer.id')
          .whereRef('newer.user_id', '=', 'f.user_id')
          .whereRef('newer.type', '=', 'f.type')
          .where('newer.status', '=', 'pending')
          .where(({ eb, or, and }) =>
            or([
              eb('newer.created_at', '>', eb.ref('f.created_at')),
              and([eb('newer.created_at', '=', eb.ref('f.created_at')), eb('newer.id', '>', eb.ref('f.id'))]),
            ]),
          ),
      ),
    )
    .execute();
  await db.schema
    .createIndex('mfa_factor_one_pending')
    .on('mfa_factor')
    .columns(['user_id', 'type'])
    .unique()
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  // The hourly delete of expired refresh tokens.
  await db.schema.createIndex('refresh_token_expiry').on('refresh_token').column('expires_at').execute();

  const unfolded = await db
    .selectFrom('user')
    .select(['id', 'username'])
    .where('username_key', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  for (const { id, username } of unfolded) {
    // Folded as users/accounts.ts folds (frozen here, as a migration must be); as in
    // 2026_11_23_2100_hardening, an account whose folded name is taken keeps a key of its own.
    const folded = username.toLowerCase();
    const taken = await db.selectFrom('user').select('id').where('username_key', '=', folded).executeTakeFirst();
    await db
      .updateTable('user')
      .set({ username_key: taken ? `${folded}:${id}` : folded })
      .where('id', '=', id)
      .execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('refresh_token_expiry').execute();
  await db.schema.dropIndex('mfa_factor_one_pending').execute();
  await db.schema.dropIndex('mfa_token_user').execute();
  await db.schema.dropIndex('refresh_token_user').execute();
}
