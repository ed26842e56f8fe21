import type { Kysely } from 'kysely';

// Third security review: attempts in flight are told from failures, and a pending enrolment
// counts the codes tried against it.
export async function up(db: Kysely<any>): Promise<void> {
  // Attempts counted and not yet judged: a refusal while some are in flight waits for them instead
  // of taking them for failures (CONTRACT §13: correct logins from one busy address).
  await db.schema
    .alterTable('login_throttle')
    .addColumn('in_flight', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('login_throttle').addColumn('in_flight_at', 'text').execute();
  // CONTRACT §14: a pending TOTP enrolment dies after 5 wrong codes.
  await db.schema
    .alterTable('mfa_factor')
    .addColumn('failed_attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mfa_factor').dropColumn('failed_attempts').execute();
  await db.schema.alterTable('login_throttle').dropColumn('in_flight_at').execute();
  await db.schema.alterTable('login_throttle').dropColumn('in_flight').execute();
}
