import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import type { SmsLimits } from '../config.js';
import { keyedHash, randomDigits, safeEqual } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { translate } from '../i18n/messages.js';
import type { LoginProof, StepUp } from '../logins/step-up.js';
import { maskEmail } from '../mail/mail-sender.js';
import { isUnanswered } from '../mfa/one-time-codes.js';
import type { MessageOutbox } from '../outbox/message-outbox.js';
import type { MessageWorker } from '../outbox/message-worker.js';
import type { Store } from '../store/store.js';
import { languageFor } from './languages.js';

/** What GET /mfa/email/ shows: the address that counts, else the one waiting for its code, else none. */
export interface EmailState {
  email: string;
  verified: boolean;
}

/** Addresses: something@domain, no spaces or angle brackets, at most 254 characters (RFC 5321 §4.5.3.1.3). */
export const EMAIL_PATTERN = '^[^\\s@<>]{1,64}@[^\\s@<>]+\\.[^\\s@<>]+$';
export const EMAIL_MAX_LENGTH = 254;

const HOUR_MS = 3_600_000;

export interface EmailDeps {
  store: Store;
  outbox: MessageOutbox;
  /** Sends a held message at once (the outbox worker's attempt). */
  sendNow: MessageWorker['attempt'];
  stepUp: StepUp;
  audit: AuditTrail;
  clock: Clock;
  /** Keys the code hashes, so that the database alone cannot reveal a code. */
  codeKey: Buffer;
  /** CONTRACT §20: codes by mail follow SMS codes' rules (§5): lifetime, attempts, cooldown, hourly caps. */
  limits: SmsLimits;
  serviceName: string;
}

/**
 * CONTRACT §20: a user's email address, which counts once a 6-digit code mailed to it comes back.
 * The mail is written to the outbox with the code (§16: never lost) and sent while the request
 * waits, so that an address the server refuses is answered at once; a server that fails or is
 * silent leaves it to the outbox's retries.
 */
export function createEmails({
  store,
  outbox,
  sendNow,
  stepUp,
  audit,
  clock,
  codeKey,
  limits,
  serviceName,
}: EmailDeps) {
  /** The user's address state; `email` is "" when they have none. */
  async function getEmail(userId: string): Promise<EmailState> {
    const current = await store.emails.findUserEmail(userId);
    if (current?.verifiedAt) return { email: current.email, verified: true };
    const pending = await findLivePending(userId);
    if (pending) return { email: pending.email, verified: false };
    return { email: current?.email ?? '', verified: false };
  }

  /**
   * Mails a new code to `email` and keeps it, hashed, as the user's pending address. A change to
   * where the account's notices and resets go, so a sensitive call (CONTRACT §14). Throws 429
   * `email_cooldown` within the resend cooldown, `email_rate_limited` past an hourly cap, 400
   * `email_address_rejected` when the mail server refuses the address, 502 `mail_unavailable`
   * when it fails, 504 `mail_timeout` when it is silent.
   */
  async function requestVerification(login: LoginProof, email: string, context: RequestContext): Promise<EmailState> {
    await stepUp.requireRecentLogin(login);
    const userId = login.userId;
    const now = clock.now();
    const hour = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS);
    const caps = [
      { scope: `email-user:${userId}`, limit: limits.perUserPerHour, reached: 'this account has had its hourly mail' },
      {
        // Keyed: the counters never hold an address.
        scope: `email-address:${keyedHash(codeKey, 'email-destination', email.toLowerCase())}`,
        limit: limits.perNumberPerHour,
        reached: 'this address has had its hourly mail',
      },
    ];
    const code = randomDigits(6);
    const id = randomUUID();
    // CONTRACT §22: ui_locales, the user's stored language, Accept-Language, as for an SMS.
    const language = await languageFor(store, userId, context);
    const mail = {
      to: email,
      subject: translate(language, 'email_code_subject', { service: serviceName, code }),
      text: translate(language, 'email_code', { service: serviceName, code, count: limits.codeTtlSeconds / 60 }),
    };
    const expiresAt = new Date(now.getTime() + limits.codeTtlSeconds * 1000);
    const held = await store.transaction(async (tx) => {
      const isFree = await tx.emails.replaceEmailCode(
        {
          id,
          userId,
          email,
          codeHash: keyedHash(codeKey, id, code),
          expiresAt,
          createdAt: now,
        },
        { cooldownStart: new Date(now.getTime() - limits.cooldownSeconds * 1000), maxAttempts: limits.maxAttempts },
      );
      if (!isFree) return undefined;
      for (const cap of caps) {
        if (!(await tx.smsQuota.incrementCounter(cap.scope, hour, cap.limit))) throw capReached(cap.reached, now, hour);
      }
      return outbox.holdMail(tx, mail, { kind: 'email_code', userId, expiresAt });
    });
    if (!held) {
      const sentAt = (await store.emails.findEmailCode(userId))?.createdAt ?? now;
      const retryAfterSeconds = Math.max(
        1,
        Math.ceil((sentAt.getTime() + limits.cooldownSeconds * 1000 - now.getTime()) / 1000),
      );
      throw new ServiceError(
        'email_cooldown',
        `a code was mailed moments ago; wait ${retryAfterSeconds} s before asking again`,
        retryAfterSeconds,
      );
    }
    // As an SMS code (CONTRACT §5): sent once, the person told at once how it went.
    const { outcome, error } = await sendNow(held);
    if (outcome !== 'sent' && !isUnanswered(error)) {
      // Refused (400) or failed (502): nothing went out, so the slot and the counts are given back.
      await store.transaction(async (tx) => {
        await tx.emails.deleteEmailCode(id);
        for (const { scope } of caps) await tx.smsQuota.decrementCounter(scope, hour);
      });
      throw error;
    }
    // Silent (504): the mail may have gone, so the code stands and the cooldown and caps are spent.
    if (error) throw error;
    context.log.info({ to: maskEmail(email) }, 'email code mailed');
    return { email, verified: false };
  }

  /**
   * Spends the pending code: the address it was mailed to becomes the user's, verified. Throws
   * 400 `invalid_mfa_code` for no, a wrong, spent, expired or exhausted code.
   */
  async function confirmVerification(login: LoginProof, code: string, context: RequestContext): Promise<EmailState> {
    const userId = login.userId;
    const refuse = async (outcome: string, description: string): Promise<never> => {
      await audit.record('email_code_check', outcome, { userId, context });
      throw new ServiceError('invalid_mfa_code', description);
    };
    const pending = await store.emails.findEmailCode(userId);
    if (!pending) return refuse('none', 'no code is pending; request one with PUT /mfa/email/request/');
    if (pending.usedAt) return refuse('spent', 'the code was already used; request a new one');
    const now = clock.now();
    if (pending.expiresAt <= now) return refuse('expired', 'the code has expired; request a new one');
    // Counted before the compare so a flood of guesses burns attempts even when they race.
    const attempt = await store.emails.countEmailCodeAttempt(pending.id, limits.maxAttempts);
    if (attempt === undefined) return refuse('dead', 'too many attempts at this code; request a new one');
    if (!safeEqual(pending.codeHash, keyedHash(codeKey, pending.id, code))) {
      return refuse('wrong', 'the code is wrong');
    }
    const isVerified = await store.transaction(async (tx) => {
      if (!(await tx.emails.markEmailCodeUsed(pending.id, now))) return false;
      if (!(await tx.emails.setVerifiedEmail(userId, pending.email, now))) {
        throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
      }
      await audit.record('email_verified', 'succeeded', { userId, context }, tx);
      return true;
    });
    if (!isVerified) return refuse('spent', 'the code was already used; request a new one');
    return { email: pending.email, verified: true };
  }

  /** An operator's address counts at once (CONTRACT §20): they know whose account it is. */
  async function setVerifiedByOperator(userId: string, email: string): Promise<void> {
    if (!(await store.emails.setVerifiedEmail(userId, email, clock.now()))) {
      throw new ServiceError('not_found', 'no user has this id');
    }
  }

  async function findLivePending(userId: string) {
    const pending = await store.emails.findEmailCode(userId);
    const isLive =
      pending && !pending.usedAt && pending.expiresAt > clock.now() && pending.attempts < limits.maxAttempts;
    return isLive ? pending : undefined;
  }

  function capReached(reached: string, now: Date, hour: Date): ServiceError {
    const retryAfterSeconds = Math.ceil((hour.getTime() + HOUR_MS - now.getTime()) / 1000);
    return new ServiceError('email_rate_limited', `${reached}; try again in ${retryAfterSeconds} s`, retryAfterSeconds);
  }

  return { getEmail, requestVerification, confirmVerification, setVerifiedByOperator };
}

export type Emails = ReturnType<typeof createEmails>;
