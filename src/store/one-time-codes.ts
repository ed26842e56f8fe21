import type { CodePurpose, Executor } from './database.js';

export interface OneTimeCode {
  id: string;
  userId: string;
  purpose: CodePurpose;
  phoneNumber: string;
  codeHash: string;
  attempts: number;
  expiresAt: Date;
  usedAt?: Date;
  /** The cooldown slot its SMS took. */
  reservationId?: string;
}

/** Stores a new code for the user and purpose, replacing (and so killing) any earlier one. */
export async function replaceCode(
  db: Executor,
  code: Omit<OneTimeCode, 'attempts' | 'usedAt'>,
  now: Date,
): Promise<void> {
  const fresh = {
    id: code.id,
    phone_number: code.phoneNumber,
    code_hash: code.codeHash,
    attempts: 0,
    expires_at: code.expiresAt.toISOString(),
    used_at: null,
    created_at: now.toISOString(),
    reservation_id: code.reservationId ?? null,
  };
  await db
    .insertInto('one_time_code')
    .values({ ...fresh, user_id: code.userId, purpose: code.purpose })
    .onConflict((conflict) => conflict.columns(['user_id', 'purpose']).doUpdateSet(fresh))
    .execute();
}

/** The user's current code for this purpose, or undefined. */
export async function findCode(db: Executor, userId: string, purpose: CodePurpose): Promise<OneTimeCode | undefined> {
  const row = await db
    .selectFrom('one_time_code')
    .selectAll()
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      userId: row.user_id,
      purpose: row.purpose,
      phoneNumber: row.phone_number,
      codeHash: row.code_hash,
      attempts: row.attempts,
      expiresAt: new Date(row.expires_at),
      usedAt: row.used_at ? new Date(row.used_at) : undefined,
      reservationId: row.reservation_id ?? undefined,
    }
  );
}

/**
 * The tables of codes spent once, whose rows share `id`, `attempts` and `used_at`: one_time_code
 * (SMS codes, email codes as a factor) and email_code (the code that proves an address).
 */
export type CodeTable = 'one_time_code' | 'email_code';

/**
 * Counts one attempt at the code in a single conditional update and returns its number. Returns
 * undefined when the code is spent, replaced, or has had its `maxAttempts` already (a racing
 * attempt may have taken the last).
 */
export async function countAttempt(
  db: Executor,
  id: string,
  maxAttempts: number,
  table: CodeTable = 'one_time_code',
): Promise<number | undefined> {
  // Typed as one of the two: the columns this statement names are alike in both.
  const row = await db
    .updateTable(table as 'one_time_code')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('attempts', '<', maxAttempts)
    .where('used_at', 'is', null)
    .returning('attempts')
    .executeTakeFirst();
  return row?.attempts;
}

/** Marks the code used. Returns false when a concurrent request used it first. */
export async function markUsed(
  db: Executor,
  id: string,
  now: Date,
  table: CodeTable = 'one_time_code',
): Promise<boolean> {
  const row = await db
    .updateTable(table as 'one_time_code')
    .set({ used_at: now.toISOString() })
    .where('id', '=', id)
    .where('used_at', 'is', null) // the guard that makes it single-use
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function deleteCodes(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('one_time_code').where('user_id', '=', userId).execute();
}
