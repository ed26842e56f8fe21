import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import type { SignInSession } from '../store/sign-in-sessions.js';
import type { Store } from '../store/store.js';
import type { Sessions } from './sessions.js';
import type { Acr } from './step-up.js';

export type { SignInSession } from '../store/sign-in-sessions.js';

export interface SignInSessionSettings {
  /** SSO_SESSION_TTL: the longest a sign-in session lasts. */
  ttlSeconds: number;
  /** SSO_SESSION_IDLE_TTL: a session not used for this long is over. */
  idleTtlSeconds: number;
}

/**
 * The browser's sign-in at the hosted page (CONTRACT §18): a cookie whose secret is stored hashed.
 * A later authorization request from the same browser is answered without asking again while it
 * stands. It is over when it expires, idles, is ended (logout), or when every login of the user
 * ends (CONTRACT §14: its row remembers the user's session generation, which such a change moves
 * on, so the one statement that ends the user's logins ends their sign-in sessions too).
 */
export function createSignInSessions({
  store,
  sessions,
  clock,
  settings,
}: {
  store: Store;
  sessions: Sessions;
  clock: Clock;
  settings: SignInSessionSettings;
}) {
  /** The session the cookie secret names, if it still stands; undefined otherwise. */
  async function findLive(secret: string | undefined): Promise<SignInSession | undefined> {
    if (!secret) return undefined;
    const now = clock.now();
    const idleSince = new Date(now.getTime() - settings.idleTtlSeconds * 1000);
    return store.signInSessions.findLiveSignInSession(sha256(secret), now, idleSince);
  }

  /** True while the session with this id stands. */
  async function isLive(id: string): Promise<boolean> {
    const now = clock.now();
    return store.signInSessions.isSignInSessionLive(id, now, new Date(now.getTime() - settings.idleTtlSeconds * 1000));
  }

  /** A use of the session: its idle time starts again. */
  async function touch(session: SignInSession): Promise<void> {
    await store.signInSessions.touchSignInSession(session.id, clock.now());
  }

  /**
   * A new session for a finished sign-in; answers it with the cookie's secret (shown only in the
   * cookie). The session it replaces, if any, is ended: a sign-in always gets a new secret.
   */
  async function start(
    proof: { userId: string; amr: string[]; acr: Acr; authTime: number; sessionGeneration: number },
    replaces: SignInSession | undefined,
  ): Promise<{ session: SignInSession; secret: string }> {
    const now = clock.now();
    const secret = randomToken(32);
    const session: SignInSession = {
      id: randomUUID(),
      ...proof,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: new Date(now.getTime() + settings.ttlSeconds * 1000),
    };
    const stored = { ...session, secretHash: sha256(secret) };
    if (!replaces) await store.signInSessions.insertSignInSession(stored);
    else {
      await store.transaction(async (tx) => {
        await tx.signInSessions.endSignInSession(replaces.id, now);
        await tx.signInSessions.insertSignInSession(stored);
      });
    }
    return { session, secret };
  }

  /**
   * Ends the session (RP-initiated logout, the account page's sign-out): it no longer answers
   * authorization requests, and every login that came through it is revoked, access tokens too.
   */
  async function end(session: { id: string; userId: string }): Promise<void> {
    const now = clock.now();
    await store.transaction(async (tx) => {
      // Behind the user's row, as every ending of logins: a rotation in flight cannot slip past it.
      await tx.factors.lockUserMfa(session.userId);
      await tx.signInSessions.endSignInSession(session.id, now);
      for (const familyId of await tx.refreshTokens.revokeSignInSessionFamilies(session.id, now)) {
        await sessions.endSession(tx, { userId: session.userId, familyId }, now);
      }
    });
  }

  return { findLive, isLive, touch, start, end };
}

export type SignInSessions = ReturnType<typeof createSignInSessions>;
