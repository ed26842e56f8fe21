import type { Acr } from '../logins/step-up.js';
import type { Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

/** A browser's sign-in at the hosted page (the OpenID Provider's session). */
export interface SignInSession {
  id: string;
  userId: string;
  amr: string[];
  acr: Acr;
  authTime: number;
  /** The user's session_generation when it was made: it is over once the user's has moved on. */
  sessionGeneration: number;
  createdAt: Date;
  lastUsedAt: Date;
  expiresAt: Date;
}

export async function insertSignInSession(
  db: Executor,
  session: SignInSession & { secretHash: string },
): Promise<void> {
  await db
    .insertInto('sign_in_session')
    .values({
      id: session.id,
      secret_hash: session.secretHash,
      user_id: session.userId,
      amr: JSON.stringify(session.amr),
      acr: session.acr,
      auth_time: session.authTime,
      session_generation: session.sessionGeneration,
      created_at: session.createdAt.toISOString(),
      last_used_at: session.lastUsedAt.toISOString(),
      expires_at: session.expiresAt.toISOString(),
      ended_at: null,
    })
    .execute();
}

/**
 * The session whose cookie secret hashes to `secretHash`, if it still stands: not ended, not
 * expired, used since `idleSince`, and made under the user's current session generation.
 */
export async function findLiveSignInSession(
  db: Executor,
  secretHash: string,
  now: Date,
  idleSince: Date,
): Promise<SignInSession | undefined> {
  const row = await db
    .selectFrom('sign_in_session')
    .innerJoin('user', 'user.id', 'sign_in_session.user_id')
    .select([
      'sign_in_session.id',
      'sign_in_session.user_id',
      'sign_in_session.amr',
      'sign_in_session.acr',
      'sign_in_session.auth_time',
      'sign_in_session.session_generation',
      'sign_in_session.created_at',
      'sign_in_session.last_used_at',
      'sign_in_session.expires_at',
    ])
    .where('sign_in_session.secret_hash', '=', secretHash)
    .where('sign_in_session.ended_at', 'is', null)
    .where('sign_in_session.expires_at', '>', now.toISOString())
    .where('sign_in_session.last_used_at', '>=', idleSince.toISOString())
    .whereRef('sign_in_session.session_generation', '=', 'user.session_generation')
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      userId: row.user_id,
      amr: JSON.parse(row.amr) as string[],
      acr: row.acr as Acr,
      authTime: row.auth_time,
      sessionGeneration: row.session_generation,
      createdAt: new Date(row.created_at),
      lastUsedAt: new Date(row.last_used_at),
      expiresAt: new Date(row.expires_at),
    }
  );
}

/** True when the session with this id still stands (as `findLiveSignInSession` judges it). */
export async function isSignInSessionLive(db: Executor, id: string, now: Date, idleSince: Date): Promise<boolean> {
  const row = await db
    .selectFrom('sign_in_session')
    .innerJoin('user', 'user.id', 'sign_in_session.user_id')
    .select('sign_in_session.id')
    .where('sign_in_session.id', '=', id)
    .where('sign_in_session.ended_at', 'is', null)
    .where('sign_in_session.expires_at', '>', now.toISOString())
    .where('sign_in_session.last_used_at', '>=', idleSince.toISOString())
    .whereRef('sign_in_session.session_generation', '=', 'user.session_generation')
    .executeTakeFirst();
  return row !== undefined;
}

/** Records a use (its idle time starts again). */
export async function touchSignInSession(db: Executor, id: string, now: Date): Promise<void> {
  await db.updateTable('sign_in_session').set({ last_used_at: now.toISOString() }).where('id', '=', id).execute();
}

/** Ends the session; false when it had ended already. */
export async function endSignInSession(db: Executor, id: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('sign_in_session')
    .set({ ended_at: now.toISOString() })
    .where('id', '=', id)
    .where('ended_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Forgets at most `limit` sessions past their end, oldest first; returns how many. */
export async function deleteExpiredSignInSessions(db: Executor, now: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'sign_in_session', now, limit, { atCutoffToo: true });
}
