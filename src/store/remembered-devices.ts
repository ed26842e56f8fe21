import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/** CONTRACT §19: a browser that skips the second step at the hosted sign-in. */
export interface RememberedDevice {
  id: string;
  userId: string;
  /** The user's session generation when it was remembered: forgotten once the user's moves on. */
  sessionGeneration: number;
  /** The methods of the sign-in that remembered it, e.g. ["pwd","otp"]. */
  amr: string[];
  /** "Chrome on Linux": what its User-Agent said. */
  browser: string;
  createdAt: Date;
  lastUsedAt: Date;
  expiresAt: Date;
}

export async function insertRememberedDevice(
  db: Executor,
  device: RememberedDevice & { tokenHash: string },
): Promise<void> {
  await db
    .insertInto('remembered_device')
    .values({
      id: device.id,
      token_hash: device.tokenHash,
      user_id: device.userId,
      session_generation: device.sessionGeneration,
      amr: JSON.stringify(device.amr),
      browser: device.browser,
      created_at: device.createdAt.toISOString(),
      last_used_at: device.lastUsedAt.toISOString(),
      expires_at: device.expiresAt.toISOString(),
    })
    .execute();
}

function liveDevices(db: Executor, now: Date) {
  return db
    .selectFrom('remembered_device')
    .innerJoin('user', 'user.id', 'remembered_device.user_id')
    .select([
      'remembered_device.id',
      'remembered_device.user_id',
      'remembered_device.session_generation',
      'remembered_device.amr',
      'remembered_device.browser',
      'remembered_device.created_at',
      'remembered_device.last_used_at',
      'remembered_device.expires_at',
    ])
    .where('remembered_device.expires_at', '>', now.toISOString())
    .whereRef('remembered_device.session_generation', '=', 'user.session_generation');
}

type Row = Awaited<ReturnType<ReturnType<typeof liveDevices>['executeTakeFirstOrThrow']>>;

function deviceOf(row: Row): RememberedDevice {
  return {
    id: row.id,
    userId: row.user_id,
    sessionGeneration: row.session_generation,
    amr: JSON.parse(row.amr) as string[],
    browser: row.browser,
    createdAt: new Date(row.created_at),
    lastUsedAt: new Date(row.last_used_at),
    expiresAt: new Date(row.expires_at),
  };
}

/** The user's device whose token hashes to `tokenHash`, if it still stands. */
export async function findLiveRememberedDevice(
  db: Executor,
  tokenHash: string,
  userId: string,
  now: Date,
): Promise<RememberedDevice | undefined> {
  const row = await liveDevices(db, now)
    .where('remembered_device.token_hash', '=', tokenHash)
    .where('remembered_device.user_id', '=', userId)
    .executeTakeFirst();
  return row && deviceOf(row);
}

/** The user's devices that still stand, the last used first. */
export async function listRememberedDevices(db: Executor, userId: string, now: Date): Promise<RememberedDevice[]> {
  const rows = await liveDevices(db, now)
    .where('remembered_device.user_id', '=', userId)
    .orderBy('remembered_device.last_used_at', 'desc')
    .execute();
  return rows.map(deviceOf);
}

export async function touchRememberedDevice(db: Executor, id: string, now: Date): Promise<void> {
  await db.updateTable('remembered_device').set({ last_used_at: now.toISOString() }).where('id', '=', id).execute();
}

/** Forgets one of the user's devices; false when there was none with this id. */
export async function deleteRememberedDevice(db: Executor, id: string, userId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('remembered_device')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes at most `limit` expired devices, oldest first; returns how many. */
export async function deleteExpiredRememberedDevices(db: Executor, now: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'remembered_device', now, limit, { atCutoffToo: true });
}

/** Deletes every device of the user: once the user's logins end, none of them can count again. */
export async function deleteUserRememberedDevices(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('remembered_device').where('user_id', '=', userId).execute();
}
