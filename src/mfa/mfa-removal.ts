import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import type { Sessions } from '../logins/sessions.js';
import type { Store } from '../store/store.js';

/**
 * Who turns MFA off: the user, from a login that is kept, the operator, or a completed recovery
 * (CONTRACT §20); these two spare no login.
 */
export type RemovalCause =
  | { by: 'user'; sessionId: string; context: RequestContext }
  | { by: 'operator' }
  | { by: 'recovery'; context: RequestContext };

/**
 * The one way every second factor of a user goes: `DELETE /mfa/`, removing the last factor, and
 * the operator's reset. Secrets, pending codes and backup codes go with them, a waiting recovery
 * request is cancelled, and every other login of the user ends, in one transaction.
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
  /**
   * Removes everything MFA of the user; returns whether MFA was on. Given `within` (a transaction
   * store), the work joins that transaction.
   */
  async function removeAllFactors(
    userId: string,
    cause: RemovalCause,
    within: Store = store,
  ): Promise<{ wasEnabled: boolean }> {
    const now = clock.now();
    const wasEnabled = await within.transaction(async (tx) => {
      await tx.factors.lockUserMfa(userId);
      const removed = await tx.factors.deleteAllFactors(userId);
      await tx.factors.setMfaEnabledAt(userId, undefined);
      await deleteSmsCodes(tx, userId);
      await tx.backupCodes.deleteBackupCodes(userId);
      await sessions.endUserSessions(tx, userId, now, cause.by === 'user' ? cause.sessionId : undefined);
      // A request waiting to remove these factors would otherwise remove the ones enrolled next.
      if (cause.by !== 'recovery' && (await tx.recoveryRequests.endRecoveryRequest(userId, 'cancelled', now))) {
        const context = cause.by === 'user' ? cause.context : undefined;
        await audit.record('recovery_cancelled', `by_${cause.by}`, { userId, context }, tx);
      }
      if (cause.by === 'operator') await audit.record('mfa_disabled', 'reset_by_operator', { userId }, tx);
      // Told as the recovery's completion (its webhook and notice), not a second time as MFA off.
      else if (cause.by === 'recovery')
        await audit.record('mfa_disabled', 'recovered', { userId, context: cause.context }, tx);
      else if (removed) await audit.record('mfa_disabled', 'succeeded', { userId, context: cause.context }, tx);
      return removed;
    });
    return { wasEnabled };
  }

  /**
   * Deletes the user's one-time codes (they name the number in clear, and a live login code would
   * still log in) and frees the login resend slot their SMS held: with no code alive, the next
   * login must be able to send one (CONTRACT §5).
   */
  async function deleteSmsCodes(tx: Store, userId: string): Promise<void> {
    const loginCode = await tx.codes.findCode(userId, 'login');
    await tx.codes.deleteCodes(userId);
    if (loginCode?.reservationId) await tx.smsQuota.releaseCooldown(userId, 'login', loginCode.reservationId);
  }

  return { removeAllFactors, deleteSmsCodes };
}

export type MfaRemoval = ReturnType<typeof createMfaRemoval>;
