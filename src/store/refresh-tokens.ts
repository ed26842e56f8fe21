import { PostgresAdapter, type SelectQueryBuilder } from 'kysely';
import type { Acr } from '../logins/step-up.js';
import type { Database, Executor } from './database.js';
import { deleteRowsBefore } from './expired-rows.js';

export interface RefreshToken {
  id: string;
  tokenHash: string;
  familyId: string;
  userId: string;
  clientId: string;
  scope: string;
  amr: string[];
  acr: Acr;
  authTime: number;
  expiresAt: Date;
  /** The browser sign-in session the login came through (the code flow); rotation keeps it. */
  signInSessionId?: string;
}

/**
 * Stores the first refresh token of a new login, unless every login of the user was ended since
 * the user was read at `sessionGeneration` (CONTRACT §14), or (for a login from an authorization
 * code) the code was replayed meanwhile (RFC 6749 §4.1.2); false then.
 */
export function startRefreshFamily(
  db: Executor,
  token: RefreshToken,
  now: Date,
  sessionGeneration: number,
  authorizationCodeHash?: string,
): Promise<boolean> {
  return insertBehindUser(db, token, now, (user) => {
    const current = user.where('user.session_generation', '=', sessionGeneration);
    if (authorizationCodeHash === undefined) return current;
    return current
      .innerJoin('authorization_code', 'authorization_code.user_id', 'user.id')
      .where('authorization_code.code_hash', '=', authorizationCodeHash)
      .where('authorization_code.replayed_at', 'is', null);
  });
}

/**
 * Stores the token that replaces `previousId` in its login (a rotation), unless that one was spent
 * or revoked first; false then.
 */
export function insertRotatedToken(db: Executor, token: RefreshToken, now: Date, previousId: string): Promise<boolean> {
  return insertBehindUser(
    db,
    token,
    now,
    (user) =>
      user
        .innerJoin('refresh_token as previous', 'previous.user_id', 'user.id')
        .where('previous.id', '=', previousId)
        .where('previous.used_at', 'is', null)
        .where('previous.revoked_at', 'is', null),
    // The browser sign-in session the login came through goes on with it.
    { sign_in_session_id: 'previous.sign_in_session_id' },
  );
}

type UserRow = SelectQueryBuilder<Database, 'user', object>;

/**
 * Inserts the token if `condition` holds of its user's row. On PostgreSQL the rows read are locked
 * `for share`. Whatever ends logins (a factor change, a revocation, a reuse) holds the user's row
 * from its start to its commit (lockUserMfa), so the insert waits for it and sees what it did, or
 * commits first and is ended by it: an UPDATE ending logins cannot miss a token stored meanwhile,
 * which it would under READ COMMITTED.
 */
async function insertBehindUser(
  db: Executor,
  token: RefreshToken,
  now: Date,
  // The condition may join further tables: any of them.
  condition: (user: UserRow) => SelectQueryBuilder<Database, any, object>,
  /** Columns taken from a table the condition joins instead of from `token`. */
  fromJoined: Partial<Record<keyof ReturnType<typeof rowOf>, string>> = {},
): Promise<boolean> {
  const row = rowOf(token, now);
  const columns = Object.keys(row) as (keyof typeof row)[];
  let source = condition(db.selectFrom('user').where('user.id', '=', token.userId)).select((eb) =>
    columns.map((column) => {
      const joined = fromJoined[column];
      return (joined === undefined ? eb.val(row[column]) : eb.ref(joined as never)).as(column);
    }),
  );
  if (db.getExecutor().adapter instanceof PostgresAdapter) source = source.forShare();
  const inserted = await db.insertInto('refresh_token').columns(columns).expression(source).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
}

function rowOf(token: RefreshToken, now: Date) {
  return {
    id: token.id,
    token_hash: token.tokenHash,
    family_id: token.familyId,
    user_id: token.userId,
    client_id: token.clientId,
    scope: token.scope,
    amr: JSON.stringify(token.amr),
    acr: token.acr,
    auth_time: token.authTime,
    expires_at: token.expiresAt.toISOString(),
    used_at: null,
    revoked_at: null,
    created_at: now.toISOString(),
    sign_in_session_id: token.signInSessionId ?? null,
  };
}

export interface StoredRefreshToken extends RefreshToken {
  usedAt?: Date;
  revokedAt?: Date;
  createdAt: Date;
}

/** The refresh token with this hash, spent or not, or undefined. */
export async function findRefreshToken(db: Executor, tokenHash: string): Promise<StoredRefreshToken | undefined> {
  const row = await db.selectFrom('refresh_token').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  return (
    row && {
      id: row.id,
      tokenHash: row.token_hash,
      familyId: row.family_id,
      userId: row.user_id,
      clientId: row.client_id,
      scope: row.scope,
      amr: JSON.parse(row.amr) as string[],
      acr: row.acr as Acr,
      authTime: row.auth_time,
      expiresAt: new Date(row.expires_at),
      usedAt: row.used_at ? new Date(row.used_at) : undefined,
      revokedAt: row.revoked_at ? new Date(row.revoked_at) : undefined,
      createdAt: new Date(row.created_at),
      signInSessionId: row.sign_in_session_id ?? undefined,
    }
  );
}

/** Spends the token. Returns false when it was spent, revoked or expired first (perhaps by a racing request). */
export async function spendRefreshToken(db: Executor, id: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('refresh_token')
    .set({ used_at: now.toISOString() })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Revokes every refresh token of the family (one login and all its rotations). */
export async function revokeFamily(db: Executor, familyId: string, now: Date): Promise<void> {
  await db
    .updateTable('refresh_token')
    .set({ revoked_at: now.toISOString() })
    .where('family_id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Revokes every login (refresh-token family) of the user that may still be in use, but
 * `exceptFamilyId`'s; returns the revoked families' ids.
 */
export async function revokeUserFamilies(
  db: Executor,
  userId: string,
  now: Date,
  exceptFamilyId?: string,
): Promise<string[]> {
  let query = db
    .updateTable('refresh_token')
    .set({ revoked_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (exceptFamilyId !== undefined) query = query.where('family_id', '<>', exceptFamilyId);
  const rows = await query.returning('family_id').execute();
  return [...new Set(rows.map((row) => row.family_id))];
}

/**
 * Revokes every login that came through the browser sign-in session (RP-initiated logout); returns
 * the revoked families' ids.
 */
export async function revokeSignInSessionFamilies(db: Executor, signInSessionId: string, now: Date): Promise<string[]> {
  const rows = await db
    .updateTable('refresh_token')
    .set({ revoked_at: now.toISOString() })
    .where('sign_in_session_id', '=', signInSessionId)
    .where('revoked_at', 'is', null)
    .returning('family_id')
    .execute();
  return [...new Set(rows.map((row) => row.family_id))];
}

/** Revokes every refresh token issued to the client (it was deleted). */
export async function revokeClientTokens(db: Executor, clientId: string, now: Date): Promise<void> {
  await db
    .updateTable('refresh_token')
    .set({ revoked_at: now.toISOString() })
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Forgets at most `limit` refresh tokens past their end, oldest first; returns how many. A login's
 * tokens all end with it, so nothing of a login still alive goes, and a spent one presented later is
 * refused as unknown instead of as expired.
 */
export async function deleteExpiredRefreshTokens(db: Executor, now: Date, limit: number): Promise<number> {
  return deleteRowsBefore(db, 'refresh_token', now, limit, { atCutoffToo: true });
}
