import type { BaseLogger } from 'pino';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { hashPassword } from '../crypto/passwords.js';
import { keyedHash, randomToken } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { translate } from '../i18n/messages.js';
import type { Sessions } from '../logins/sessions.js';
import { maskEmail } from '../mail/mail-sender.js';
import { startOfHour } from '../mfa/country-budgets.js';
import type { MessageOutbox } from '../outbox/message-outbox.js';
import type { Store } from '../store/store.js';
import { foldUsername, NO_PASSWORD_HASH } from './accounts.js';
import { ownersLanguage } from './languages.js';
import { requireAcceptablePassword } from './password-policy.js';

/** CONTRACT §20: a reset link lives 30 minutes. */
export const RESET_TTL_SECONDS = 30 * 60;
/** Requests per hour for one username or address as typed: past it, 429 whether or not an account has it. */
const REQUESTS_PER_NAME_PER_HOUR = 5;
/** Links per hour mailed for one account, however it was named: past it, no mail and the same 202. */
const LINKS_PER_ACCOUNT_PER_HOUR = 3;
/** Accounts one address may reach (an address may be verified on a few accounts). */
const ACCOUNTS_PER_ADDRESS = 5;
const HOUR_MS = 3_600_000;

/** What a request named: a username or an address, as typed and folded. */
interface Name {
  kind: 'username' | 'email';
  value: string;
  folded: string;
}

export interface PasswordResetDeps {
  store: Store;
  /** The link's mail goes through the outbox (CONTRACT §20): sealed while it waits, retried, sent once. */
  outbox: MessageOutbox;
  sessions: Sessions;
  audit: AuditTrail;
  clock: Clock;
  /** Keys the link hashes and the throttle's scopes. */
  key: Buffer;
  issuer: string;
  serviceName: string;
}

/**
 * "Forgot password" (CONTRACT §20): a single-use link, mailed to the account's verified address,
 * sets a new password. Asking answers the same, in the same time, whether or not an account is
 * found: only the throttle on the name asked for is judged before the answer. Setting the password
 * ends every login and sign-in session and signs no one in, so a second factor is still asked at
 * the next sign-in.
 */
export function createPasswordReset({
  store,
  outbox,
  sessions,
  audit,
  clock,
  key,
  issuer,
  serviceName,
}: PasswordResetDeps) {
  const pending = new Set<Promise<void>>();

  /**
   * Mails a reset link to each account `who` names that has a verified address and a password.
   * Throws 429 `reset_rate_limited` when this username or address was asked for too often this
   * hour, whether or not an account has it; answers nothing else, so the caller learns nothing.
   */
  async function requestReset(who: { username?: string; email?: string }, context: RequestContext): Promise<void> {
    const named = nameOf(who);
    const now = clock.now();
    const hour = startOfHour(now);
    const nameScope = `reset-name:${keyedHash(key, 'reset-name', named.kind, named.folded)}`;
    if (!(await store.smsQuota.incrementCounter(nameScope, hour, REQUESTS_PER_NAME_PER_HOUR))) {
      const retryAfterSeconds = Math.ceil((hour.getTime() + HOUR_MS - now.getTime()) / 1000);
      throw new ServiceError(
        'reset_rate_limited',
        `this ${named.kind === 'email' ? 'address' : 'username'} has had ${REQUESTS_PER_NAME_PER_HOUR} reset requests this hour; try again in ${retryAfterSeconds} s`,
        retryAfterSeconds,
      );
    }
    // Everything that depends on the account happens after the answer, so that neither the
    // database's work nor the mail server's time tells whoever asks whether an account was found.
    afterAnswer(() => mailLinks(named, now, context), context.log);
  }

  async function mailLinks(named: Name, now: Date, context: RequestContext): Promise<void> {
    const hour = startOfHour(now);
    for (const account of await findAccounts(named)) {
      if (!(await store.smsQuota.incrementCounter(`reset-user:${account.id}`, hour, LINKS_PER_ACCOUNT_PER_HOUR))) {
        // Silent: a 429 here would tell whoever asks that the account exists.
        await audit.record('password_reset_requested', 'throttled', { userId: account.id, context });
        continue;
      }
      const token = randomToken(32);
      // Anyone may ask for a reset of any account: the asker must not choose the words the owner reads.
      const language = await ownersLanguage(store, account.id);
      const values = {
        service: serviceName,
        username: account.username,
        link: `${issuer}/account/reset/?token=${token}`,
        minutes: RESET_TTL_SECONDS / 60,
      };
      const message = {
        to: account.email,
        subject: translate(language, 'password_reset_subject', values),
        text: translate(language, 'password_reset', values),
      };
      // The link and its mail together: a link is never kept without its mail, nor mailed unkept.
      await store.transaction(async (tx) => {
        await tx.passwordResets.replacePasswordReset(
          {
            userId: account.id,
            tokenHash: keyedHash(key, 'password-reset', token),
            email: account.email,
            expiresAt: new Date(now.getTime() + RESET_TTL_SECONDS * 1000),
          },
          now,
        );
        await outbox.queueMail(tx, message, { kind: 'password_reset', userId: account.id });
      });
      await audit.record('password_reset_requested', 'mailed', { userId: account.id, context });
      context.log.info({ to: maskEmail(account.email) }, 'password reset link queued for mail');
    }
  }

  /**
   * Sets the password of the account the link belongs to and spends the link; ends every login
   * and sign-in session of the user. Throws 400 `invalid_reset_token` for an unknown, spent or
   * expired link (or one to an address no longer the account's), 400 `weak_password` (the link
   * is then still good).
   */
  async function resetPassword(token: string, newPassword: string, context: RequestContext): Promise<void> {
    const tokenHash = keyedHash(key, 'password-reset', token);
    const reset = await store.passwordResets.findPasswordReset(tokenHash);
    const now = clock.now();
    const refuse = (why: string) =>
      new ServiceError('invalid_reset_token', `${why}; ask for a new link with POST /mfa/password/reset/`);
    if (!reset) throw refuse('this reset link is not known (a newer link replaces an older one)');
    if (reset.usedAt) throw refuse('this reset link was already used');
    if (reset.expiresAt <= now)
      throw refuse(`this reset link has expired (links last ${RESET_TTL_SECONDS / 60} minutes)`);
    const user = await store.users.findUserById(reset.userId);
    const current = await store.emails.findUserEmail(reset.userId);
    if (!user || !current?.verifiedAt || current.email.toLowerCase() !== reset.email.toLowerCase()) {
      throw refuse("this reset link went to an address that is no longer the account's");
    }
    await requireAcceptablePassword(newPassword, user.username);
    const hash = await hashPassword(newPassword);
    await store.transaction(async (tx) => {
      await tx.factors.lockUserMfa(user.id);
      // Settled by the database: of two uses racing, one spends the link and the other stops here.
      if (!(await tx.passwordResets.markPasswordResetUsed(tokenHash, now)))
        throw refuse('this reset link was already used');
      await tx.users.setPasswordHash(user.id, hash);
      await sessions.endUserSessions(tx, user.id, now);
      await audit.record('password_changed', 'reset', { userId: user.id, context }, tx);
    });
  }

  /** Waits for the links still being made and mailed (the service is closing). */
  async function drain(): Promise<void> {
    await Promise.all(pending);
  }

  function nameOf(who: { username?: string; email?: string }): Name {
    if ((who.username === undefined) === (who.email === undefined)) {
      throw new ServiceError('invalid_request', 'send either username or email (one of them, not both)');
    }
    return who.email !== undefined
      ? { kind: 'email', value: who.email, folded: who.email.toLowerCase() }
      : { kind: 'username', value: who.username ?? '', folded: foldUsername(who.username ?? '') };
  }

  /** The accounts a reset for `named` reaches: those with a verified address and a password to reset. */
  async function findAccounts(named: Name) {
    if (named.kind === 'email') {
      const accounts = await store.emails.listUsersWithVerifiedEmail(named.value, ACCOUNTS_PER_ADDRESS);
      return accounts.filter((account) => account.passwordHash !== NO_PASSWORD_HASH);
    }
    const user = await store.users.findUserByUsername(named.value, named.folded);
    if (!user || user.passwordHash === NO_PASSWORD_HASH) return [];
    const email = await store.emails.findUserEmail(user.id);
    return email?.verifiedAt ? [{ id: user.id, username: user.username, email: email.email }] : [];
  }

  /** Runs `work` after the answer; a failure is logged (the sender said why; no link is logged). */
  function afterAnswer(work: () => Promise<void>, log: BaseLogger): void {
    const running = work()
      .catch((error: unknown) => {
        log.warn({ code: (error as { code?: string }).code }, 'password reset link not mailed');
      })
      .finally(() => pending.delete(running));
    pending.add(running);
  }

  return { requestReset, resetPassword, drain };
}

export type PasswordReset = ReturnType<typeof createPasswordReset>;
