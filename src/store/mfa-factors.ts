import { sql } from 'kysely';
import type { Executor } from './database.js';
import { FACTOR_COLUMNS, type Factor, toFactor } from './factor-record.js';

export type { Factor } from './factor-record.js';

/** Every factor of the user, pending ones included, oldest first. */
export async function listFactors(db: Executor, userId: string): Promise<Factor[]> {
  const rows = await db
    .selectFrom('mfa_factor')
    .select(FACTOR_COLUMNS)
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toFactor);
}

/** The user's factor with this id (pending or verified), or undefined. */
export async function findFactor(db: Executor, userId: string, id: string): Promise<Factor | undefined> {
  if (id.includes('\0')) return undefined; // PostgreSQL text cannot hold NUL
  const row = await db
    .selectFrom('mfa_factor')
    .select(FACTOR_COLUMNS)
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && toFactor(row);
}

/**
 * Stores a pending enrolment, replacing the user's earlier pending one of the same type, in one
 * upsert on the index that allows one pending factor per user and type: enrolments started at once
 * leave one, the last.
 */
export async function replacePendingFactor(
  db: Executor,
  factor: Pick<Factor, 'id' | 'userId' | 'type' | 'name' | 'createdAt' | 'phoneNumber' | 'sealedSecret' | 'data'>,
): Promise<void> {
  const pending = {
    id: factor.id,
    name: factor.name,
    created_at: factor.createdAt.toISOString(),
    phone_number: factor.phoneNumber ?? null,
    sealed_secret: factor.sealedSecret ?? null,
    data: factor.data ?? null,
    failed_attempts: 0,
  };
  await db
    .insertInto('mfa_factor')
    .values({ ...pending, user_id: factor.userId, type: factor.type, is_default: 0, status: 'pending' })
    .onConflict((conflict) =>
      // The index's own predicate, as a literal: SQLite matches a partial index only by its text.
      conflict.columns(['user_id', 'type']).where('status', '=', sql.lit('pending')).doUpdateSet(pending),
    )
    .execute();
}

/**
 * Counts one code tried against the pending factor, before it is judged, while fewer than `max`
 * were; false when the enrolment is dead (or no longer pending). The conditional update settles
 * races: of many codes sent at once, at most `max` are judged.
 */
export async function countEnrolmentAttempt(db: Executor, factorId: string, max: number): Promise<boolean> {
  const row = await db
    .updateTable('mfa_factor')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1) }))
    .where('id', '=', factorId)
    .where('status', '=', 'pending')
    .where('failed_attempts', '<', max)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Locks the user's MFA state for the rest of the transaction (a no-op update: PostgreSQL holds the
 * row until commit, SQLite the whole database) and returns when MFA was turned on, or undefined
 * while it is off. Factor changes run behind it, so two of them cannot both think they are first,
 * and so does whatever ends logins (a rotation waits for it: store/refresh-tokens.ts).
 */
export async function lockUserMfa(db: Executor, userId: string): Promise<{ mfaEnabledAt?: Date } | undefined> {
  const row = await db
    .updateTable('user')
    .set((eb) => ({ mfa_enabled_at: eb.ref('mfa_enabled_at') }))
    .where('id', '=', userId)
    .returning('mfa_enabled_at')
    .executeTakeFirst();
  return row && { mfaEnabledAt: row.mfa_enabled_at ? new Date(row.mfa_enabled_at) : undefined };
}

/**
 * Records when MFA was turned on (or, with undefined, that it is off), and keeps the count of users
 * with MFA on. Run it in the transaction that changed the factors, behind `lockUserMfa`.
 */
export async function setMfaEnabledAt(db: Executor, userId: string, at: Date | undefined): Promise<void> {
  const before = await db.selectFrom('user').select('mfa_enabled_at').where('id', '=', userId).executeTakeFirst();
  await db
    .updateTable('user')
    .set({ mfa_enabled_at: at?.toISOString() ?? null })
    .where('id', '=', userId)
    .execute();
  const wasOn = before !== undefined && before.mfa_enabled_at !== null;
  if (before !== undefined && wasOn !== (at !== undefined)) await addToMfaEnabledCount(db, at ? 1 : -1);
}

export async function addToMfaEnabledCount(db: Executor, change: number): Promise<void> {
  await db
    .updateTable('user_count')
    .set((eb) => ({ value: eb('value', '+', change) }))
    .where('name', '=', 'mfa_enabled')
    .execute();
}

/**
 * Makes a pending factor verified (and the default when `isDefault`), with the facts its proof
 * settled; returns false when it was not pending (verified by a racing request, or replaced).
 */
export async function verifyFactor(
  db: Executor,
  factorId: string,
  now: Date,
  settled: { isDefault: boolean; phoneNumber?: string; counter?: number },
): Promise<boolean> {
  const row = await db
    .updateTable('mfa_factor')
    .set({
      status: 'verified',
      verified_at: now.toISOString(),
      is_default: settled.isDefault ? 1 : 0,
      ...(settled.phoneNumber === undefined ? {} : { phone_number: settled.phoneNumber }),
      ...(settled.counter === undefined ? {} : { counter: settled.counter }),
    })
    .where('id', '=', factorId)
    .where('status', '=', 'pending')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Makes the verified factor the user's default (and no other); false when there is no such factor. */
export async function setDefaultFactor(db: Executor, userId: string, factorId: string): Promise<boolean> {
  const rows = await db
    .updateTable('mfa_factor')
    .set((eb) => ({ is_default: eb.case().when('id', '=', factorId).then(1).else(0).end() }))
    .where('user_id', '=', userId)
    .where('status', '=', 'verified')
    .returning('id')
    .execute();
  return rows.some((row) => row.id === factorId);
}

export async function renameFactor(db: Executor, userId: string, factorId: string, name: string): Promise<void> {
  await db.updateTable('mfa_factor').set({ name }).where('user_id', '=', userId).where('id', '=', factorId).execute();
}

/** Deletes the factor with its secrets; returns it, or undefined when there was none. */
export async function deleteFactor(db: Executor, userId: string, factorId: string): Promise<Factor | undefined> {
  const row = await db
    .deleteFrom('mfa_factor')
    .where('user_id', '=', userId)
    .where('id', '=', factorId)
    .returningAll()
    .executeTakeFirst();
  return row && toFactor(row);
}

/** Deletes every factor of the user, pending ones included; returns whether one was verified. */
export async function deleteAllFactors(db: Executor, userId: string): Promise<boolean> {
  const rows = await db.deleteFrom('mfa_factor').where('user_id', '=', userId).returning('status').execute();
  return rows.some((row) => row.status === 'verified');
}

/**
 * Moves the factor's counter up to `value` in one conditional update; false when it is already
 * there or past it. The guard that makes a TOTP step, or a passkey's signature, count once.
 */
export async function advanceCounter(db: Executor, factorId: string, value: number): Promise<boolean> {
  const row = await db
    .updateTable('mfa_factor')
    .set({ counter: value })
    .where('id', '=', factorId)
    .where((eb) => eb.or([eb('counter', 'is', null), eb('counter', '<', value)]))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function markFactorUsed(db: Executor, factorId: string, now: Date): Promise<void> {
  await db.updateTable('mfa_factor').set({ last_used_at: now.toISOString() }).where('id', '=', factorId).execute();
}

/** How many users have MFA on (a verified factor). */
/** Users with MFA on: one row, kept by `setMfaEnabledAt` and user deletion (no count of factors). */
export async function countUsersWithMfa(db: Executor): Promise<number> {
  const row = await db.selectFrom('user_count').select('value').where('name', '=', 'mfa_enabled').executeTakeFirst();
  return Number(row?.value ?? 0);
}

/** Every user with the types of their verified factors and their SMS number, by username. */
/**
 * A page of users in username order (any case), after the username key `after`, with the types of
 * their verified factors: one query for the page, one for its factors, whatever the number of users.
 */
export async function listUsersWithFactors(
  db: Executor,
  page: { after?: string; limit: number },
): Promise<{ id: string; username: string; usernameKey: string; factorTypes: string[]; phoneNumber?: string }[]> {
  let select = db
    .selectFrom('user')
    .select(['id', 'username', 'username_key'])
    .orderBy('username_key')
    .limit(page.limit);
  if (page.after !== undefined) select = select.where('username_key', '>', page.after);
  const users = await select.execute();
  if (users.length === 0) return [];
  const factors = await db
    .selectFrom('mfa_factor')
    .select(['user_id', 'type', 'phone_number'])
    .where('status', '=', 'verified')
    .where(
      'user_id',
      'in',
      users.map((user) => user.id),
    )
    .orderBy('created_at')
    .execute();
  const byUser = new Map<string, typeof factors>();
  for (const factor of factors) byUser.set(factor.user_id, [...(byUser.get(factor.user_id) ?? []), factor]);
  return users.map((user) => {
    const own = byUser.get(user.id) ?? [];
    return {
      id: user.id,
      username: user.username,
      usernameKey: user.username_key,
      factorTypes: [...new Set(own.map((factor) => factor.type))],
      phoneNumber: own.find((factor) => factor.phone_number !== null)?.phone_number ?? undefined,
    };
  });
}

/** When the user's MFA was turned on, or undefined while it is off (or the user does not exist). */
export async function findMfaEnabledAt(db: Executor, userId: string): Promise<Date | undefined> {
  const row = await db.selectFrom('user').select('mfa_enabled_at').where('id', '=', userId).executeTakeFirst();
  return row?.mfa_enabled_at ? new Date(row.mfa_enabled_at) : undefined;
}
