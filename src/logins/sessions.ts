import type { Store } from '../store/store.js';

/**
 * Ends logins: their refresh tokens stop refreshing and their access tokens are refused (by the
 * login's `sid`) until the last of them would have expired anyway.
 */
export function createSessions({ accessTokenTtlSeconds }: { accessTokenTtlSeconds: number }) {
  /** Ends one login. Run it on the store of the transaction that makes the change it follows. */
  async function endSession(store: Store, login: { userId: string; familyId: string }, now: Date): Promise<void> {
    // Behind the user's row, which a rotation waits for: the revoking UPDATE cannot miss its token.
    await store.factors.lockUserMfa(login.userId);
    await store.refreshTokens.revokeFamily(login.familyId, now);
    await store.revokedTokens.insertRevokedToken(login.familyId, refusedUntil(now));
  }

  /**
   * CONTRACT §14: after a change to the user's second factors every login made before it ends,
   * but `exceptSessionId`, the login that made the change (an operator's reset spares none), and
   * a login in flight, which read the user before, can no longer finish. Run it in the
   * transaction that makes the change.
   */
  async function endUserSessions(store: Store, userId: string, now: Date, exceptSessionId?: string): Promise<void> {
    await store.users.endLoginsInFlight(userId);
    // Remembered devices count only at the user's current generation: none of these can again.
    await store.rememberedDevices.deleteUserRememberedDevices(userId);
    for (const sessionId of await store.refreshTokens.revokeUserFamilies(userId, now, exceptSessionId)) {
      await store.revokedTokens.insertRevokedToken(sessionId, refusedUntil(now));
    }
  }

  function refusedUntil(now: Date): Date {
    return new Date(now.getTime() + accessTokenTtlSeconds * 1000);
  }

  return { endSession, endUserSessions };
}

export type Sessions = ReturnType<typeof createSessions>;
