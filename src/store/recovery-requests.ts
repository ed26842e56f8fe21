import type { Executor, RecoveryState } from './database.js';

export interface RecoveryRequest {
  userId: string;
  state: RecoveryState;
  readyAt: Date;
}

/** The user's latest recovery request, or undefined when they never asked. */
export async function findRecoveryRequest(db: Executor, userId: string): Promise<RecoveryRequest | undefined> {
  const row = await db
    .selectFrom('recovery_request')
    .select(['user_id', 'state', 'ready_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && { userId: row.user_id, state: row.state, readyAt: new Date(row.ready_at) };
}

/**
 * Starts a waiting request for the user, replacing a cancelled or completed one. Returns false
 * when one is already waiting (a racing request started it): that one stands.
 */
export async function startRecoveryRequest(
  db: Executor,
  request: { id: string; userId: string; readyAt: Date; createdAt: Date },
): Promise<boolean> {
  const fresh = {
    id: request.id,
    state: 'waiting' as const,
    ready_at: request.readyAt.toISOString(),
    created_at: request.createdAt.toISOString(),
    ended_at: null,
  };
  const row = await db
    .insertInto('recovery_request')
    .values({ ...fresh, user_id: request.userId })
    .onConflict((conflict) =>
      conflict.column('user_id').doUpdateSet(fresh).where('recovery_request.state', '!=', 'waiting'),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Ends the user's waiting request as `state` (`completed` only once `ready_at` has passed at
 * `now`, and only if no factor was added since the request: it was made to remove those before
 * it). Returns false when none was waiting (or ready): a racing call ended it first.
 */
export async function endRecoveryRequest(
  db: Executor,
  userId: string,
  state: 'cancelled' | 'completed',
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('recovery_request')
    .set({ state, ended_at: now.toISOString() })
    .where('user_id', '=', userId)
    .where('state', '=', 'waiting')
    .$if(state === 'completed', (query) =>
      query
        .where('ready_at', '<=', now.toISOString())
        .where(({ exists, not, selectFrom }) =>
          not(
            exists(
              selectFrom('mfa_factor')
                .select('mfa_factor.id')
                .where('mfa_factor.user_id', '=', userId)
                .whereRef('mfa_factor.created_at', '>', 'recovery_request.created_at'),
            ),
          ),
        ),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}
