import type { Kysely } from 'kysely';
import { type Executor, skipLockedOnPostgres } from './database.js';

/** The tables whose rows end at a time, each with its key and the indexed column that says when. */
const EXPIRING = {
  refresh_token: { key: 'id', time: 'expires_at' },
  sign_in_session: { key: 'id', time: 'expires_at' },
  remembered_device: { key: 'id', time: 'expires_at' },
  mfa_token: { key: 'token_hash', time: 'expires_at' },
  authorization_code: { key: 'code_hash', time: 'expires_at' },
  invite: { key: 'token_hash', time: 'expires_at' },
  passkey_sign_in_challenge: { key: 'challenge_hash', time: 'expires_at' },
  login_throttle: { key: 'scope', time: 'last_failure_at' },
  sign_in_hour: { key: 'hour', time: 'hour' },
} as const;

/**
 * Deletes at most `limit` rows of `table` whose time is before `cutoff` (or at it, `atCutoffToo`),
 * oldest first, read from the index on that time; returns how many. On PostgreSQL rows another
 * transaction holds are passed by (a clean-up never waits on, or deadlocks with, a request), and the
 * time is checked again on the row itself, which a request may have moved meanwhile.
 */
export async function deleteRowsBefore(
  db: Executor,
  table: keyof typeof EXPIRING,
  cutoff: Date,
  limit: number,
  { atCutoffToo = false }: { atCutoffToo?: boolean } = {},
): Promise<number> {
  // The tables share no type; Kysely cannot type a query over a union of them.
  const any = db as unknown as Kysely<any>;
  const { key, time } = EXPIRING[table];
  const from: string = table;
  const before = atCutoffToo ? '<=' : '<';
  const oldest = any.selectFrom(from).select(key).where(time, before, cutoff.toISOString()).orderBy(time).limit(limit);
  const result = await any
    .deleteFrom(from)
    .where(key, 'in', skipLockedOnPostgres(db, oldest))
    .where(time, before, cutoff.toISOString())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
