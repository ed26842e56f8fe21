import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import type { Sessions } from '../oauth/sessions.js';
import type { Store } from '../store/store.js';

/** Who turns MFA off: the user, from a login that is kept, or the operator, who spares no login. */
export type RemovalCause = { by: 'user'; sessionId: string; context: RequestContext } | { by: 'operator' };

/**
 * The one way every second factor of a user goes: `DELETE /mfa/`, removing the last factor, and
 * the operator's reset. Secrets, pending codes and backup codes go with them, and every other
 * login of the user ends, in one transaction.
 */
export function createMfaRemoval({
  store,
  sessions,
  audit,
  clock,
}: {
  store: Store;
  sessions: Sessions;
  audit: AuditTrail;
  clock: Clock;
}) {
  /** Removes everything MFA of the user; returns whether MFA was on. */
  async function removeAllFactors(userId: string, cause: RemovalCause): Promise<{ wasEnabled: boolean }> {
    const now = clock.now();
    const wasEnabled = await store.transaction(async (tx) => {
      await tx.factors.lockUserMfa(userId);
      const removed = await tx.factors.deleteAllFactors(userId);
      await tx.factors.setMfaEnabledAt(userId, undefined);
      await tx.codes.deleteCodes(userId);
      await tx.backupCodes.deleteBackupCodes(userId);
      await sessions.endUserSessions(tx, userId, now, cause.by === 'user' ? cause.sessionId : undefined);
      if (cause.by === 'operator') await audit.record('mfa_disabled', 'reset_by_operator', { userId }, tx);
      else if (removed) await audit.record('mfa_disabled', 'succeeded', { userId, context: cause.context }, tx);
      return removed;
    });
    return { wasEnabled };
  }

  return { removeAllFactors };
}

export type MfaRemoval = ReturnType<typeof createMfaRemoval>;
