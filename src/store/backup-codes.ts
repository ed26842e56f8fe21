import type { Executor } from './database.js';

/** Replaces the user's backup codes with these hashes (the old set stops working). */
export async function replaceBackupCodes(
  db: Executor,
  userId: string,
  codes: { id: string; codeHash: string }[],
  now: Date,
): Promise<void> {
  await db.deleteFrom('backup_code').where('user_id', '=', userId).execute();
  await db
    .insertInto('backup_code')
    .values(
      codes.map((code) => ({ id: code.id, user_id: userId, code_hash: code.codeHash, created_at: now.toISOString() })),
    )
    .execute();
}

/** Spends the unused code with this hash in one conditional update; false when there is none (or it was spent first). */
export async function spendBackupCode(db: Executor, userId: string, codeHash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('backup_code')
    .set({ used_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function countUnusedBackupCodes(db: Executor, userId: string): Promise<number> {
  const row = await db
    .selectFrom('backup_code')
    .select((eb) => eb.fn.countAll<number | string>().as('unused'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.unused);
}

export async function deleteBackupCodes(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('backup_code').where('user_id', '=', userId).execute();
}
