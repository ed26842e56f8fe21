import type { Executor } from './database.js';

export interface MfaRecord {
  isEnabled: boolean;
  phoneNumber?: string;
  enabledAt?: Date;
}

/** The user's MFA row, or undefined when they never asked for MFA. */
export async function findMfa(db: Executor, userId: string): Promise<MfaRecord | undefined> {
  const row = await db
    .selectFrom('mfa')
    .select(['enabled', 'phone_number', 'enabled_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return (
    row && {
      isEnabled: row.enabled === 1,
      phoneNumber: row.phone_number ?? undefined,
      enabledAt: row.enabled_at ? new Date(row.enabled_at) : undefined,
    }
  );
}

/** Records the number being enrolled; returns false when MFA is already on (nothing changes). */
export async function setPendingPhone(db: Executor, userId: string, phoneNumber: string): Promise<boolean> {
  const row = await db
    .insertInto('mfa')
    .values({ user_id: userId, enabled: 0, phone_number: phoneNumber })
    .onConflict((conflict) =>
      conflict.column('user_id').doUpdateSet({ phone_number: phoneNumber }).where('mfa.enabled', '=', 0),
    )
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Turns SMS MFA on for this number; returns false when it was already on. */
export async function enableSms(db: Executor, userId: string, phoneNumber: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('mfa')
    .set({ enabled: 1, phone_number: phoneNumber, enabled_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('enabled', '=', 0)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** How many users have MFA on. */
export async function countEnabledMfa(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('mfa')
    .select((eb) => eb.fn.countAll<number | string>().as('enabled'))
    .where('enabled', '=', 1)
    .executeTakeFirstOrThrow();
  return Number(row.enabled);
}

/** Every user with their MFA state, by username. */
export async function listUsersWithMfa(
  db: Executor,
): Promise<{ id: string; username: string; isEnabled: boolean; phoneNumber?: string }[]> {
  const rows = await db
    .selectFrom('user')
    .leftJoin('mfa', 'mfa.user_id', 'user.id')
    .select(['user.id', 'user.username', 'mfa.enabled', 'mfa.phone_number'])
    .orderBy('user.username')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    username: row.username,
    isEnabled: row.enabled === 1,
    phoneNumber: row.phone_number ?? undefined,
  }));
}

/** Removes the user's MFA state whatever it is; returns whether MFA was on. */
export async function deleteMfa(db: Executor, userId: string): Promise<boolean> {
  const row = await db.deleteFrom('mfa').where('user_id', '=', userId).returning('enabled').executeTakeFirst();
  return row?.enabled === 1;
}
