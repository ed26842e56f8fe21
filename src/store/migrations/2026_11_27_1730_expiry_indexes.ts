import type { Kysely } from 'kysely';

// Issue 33: the hourly clean-ups of expired rows left the requests for the retention worker, which
// deletes a few hundred rows a statement, oldest first. Each delete reads its rows from an index on
// time; these three tables had none (the throttle's delete, and those of MFA tokens and invites,
// scanned their tables).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('login_throttle_last_failure').on('login_throttle').column('last_failure_at').execute();
  await db.schema.createIndex('mfa_token_expiry').on('mfa_token').column('expires_at').execute();
  await db.schema.createIndex('invite_expiry').on('invite').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('invite_expiry').execute();
  await db.schema.dropIndex('mfa_token_expiry').execute();
  await db.schema.dropIndex('login_throttle_last_failure').execute();
}
