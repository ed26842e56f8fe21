import type { RequestContext } from '../audit/audit-trail.js';
import { type Language, translate } from '../i18n/messages.js';
import type { MessageOutbox } from '../outbox/message-outbox.js';
import type { Store } from '../store/store.js';
import { languageFor, ownersLanguage } from '../users/languages.js';
import { describeUserAgent } from './user-agent.js';

/** CONTRACT §20: what a user is told of, by email, when they have a verified address. */
export const NOTICE_KINDS = [
  'factor_added',
  'factor_removed',
  'mfa_disabled',
  'backup_codes_created',
  'backup_code_used',
  'password_changed',
  'sign_in_throttled',
  'recovery_started',
  'recovery_cancelled',
  'recovery_completed',
] as const;

export type NoticeKind = (typeof NOTICE_KINDS)[number];

/**
 * The audit events that are notices, by `type:outcome` (or `type` for any outcome), as
 * webhooks/outbox.ts maps them to webhook events: the one place that decides what is told.
 */
const FROM_AUDIT: Record<string, NoticeKind> = {
  // The first factor turns MFA on: to the user, a factor was added either way.
  'mfa_enabled:succeeded': 'factor_added',
  'factor_added:succeeded': 'factor_added',
  'factor_removed:succeeded': 'factor_removed',
  'mfa_disabled:succeeded': 'mfa_disabled',
  'mfa_disabled:reset_by_operator': 'mfa_disabled',
  'backup_codes_regenerated:succeeded': 'backup_codes_created',
  'backup_code_used:succeeded': 'backup_code_used',
  // The person's own change, an operator's, or a reset.
  password_changed: 'password_changed',
  'login:throttled': 'sign_in_throttled',
  'mfa_throttled:refused': 'sign_in_throttled',
  'recovery_started:succeeded': 'recovery_started',
  recovery_cancelled: 'recovery_cancelled',
  'recovery_completed:succeeded': 'recovery_completed',
};

/**
 * The notices that may follow anyone's request (a password guessed, a recovery asked with a stolen
 * password): the asker must not choose the words the owner reads, so they are in the owner's
 * stored language, else English. The others tell of the owner's own changes (proved by a login of
 * theirs), in the language of that request (CONTRACT §22: ui_locales, the stored one, Accept-Language).
 */
const SOMEONE_ELSES = new Set<NoticeKind>(['sign_in_throttled', 'recovery_started', 'recovery_completed']);

/**
 * The notice an audit event is, or undefined when it is none. A block of a client address is no
 * news to the owner of whatever username that client tried: only the username's own block is.
 */
export function noticeFor(type: string, outcome: string, detail?: Record<string, string>): NoticeKind | undefined {
  if (type === 'login' && detail?.limit !== 'user') return undefined;
  return FROM_AUDIT[`${type}:${outcome}`] ?? FROM_AUDIT[type];
}

/** At most one `sign_in_throttled` notice per user in this long: guesses must not flood the owner. */
const THROTTLE_NOTICE_EVERY_MS = 24 * 3600 * 1000;

/** A notice's facts: the audit event's. `detail.ready_at` is a recovery's (ISO time). */
export interface NoticeFacts {
  userId: string;
  occurredAt: Date;
  /** The audit event's outcome: `…_by_operator` when an operator made the change. */
  outcome?: string;
  context?: RequestContext;
  detail?: Record<string, string>;
}

/** A time as people of `language` read it, in UTC (the service knows no one's time zone). */
export function formatTime(language: Language, at: Date): string {
  const formatted = new Intl.DateTimeFormat(language, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
  return `${formatted.format(at)} UTC`;
}

/**
 * Security notices (CONTRACT §20): a mail saying what happened, when, from which address and
 * browser, and what to do if it was not them, in the language of the owner's request that caused
 * it (the owner's stored language, else English, when the request may be someone else's).
 * Never a code or a secret: the texts have no place for one.
 */
export function createSecurityNotices({
  outbox,
  serviceName,
  issuer,
}: {
  outbox: MessageOutbox;
  serviceName: string;
  issuer: string;
}) {
  /**
   * Puts the notice in the outbox when the user has a verified address; nothing otherwise. Run it
   * on the store of the transaction that makes the change.
   */
  async function queueNotice(tx: Store, kind: NoticeKind, facts: NoticeFacts): Promise<void> {
    const address = await tx.emails.findUserEmail(facts.userId);
    if (!address?.verifiedAt) return;
    if (kind === 'sign_in_throttled') {
      const since = new Date(facts.occurredAt.getTime() - THROTTLE_NOTICE_EVERY_MS);
      if (!(await tx.users.claimThrottleNotice(facts.userId, facts.occurredAt, since))) return;
    }
    // An operator's change is someone else's request too: the operator's browser chooses no words.
    const isSomeoneElses = SOMEONE_ELSES.has(kind) || facts.outcome?.endsWith('_by_operator') === true;
    const language = isSomeoneElses
      ? await ownersLanguage(tx, facts.userId)
      : await languageFor(tx, facts.userId, facts.context ?? {});
    const unknown = translate(language, 'notice_unknown', {});
    const readyAt = facts.detail?.ready_at;
    const values = {
      service: serviceName,
      account: `${issuer}/account/`,
      time: formatTime(language, facts.occurredAt),
      address: facts.context?.clientAddress ?? unknown,
      browser: describeUserAgent(facts.context?.userAgent) ?? translate(language, 'notice_unknown_browser', {}),
      ready: readyAt ? formatTime(language, new Date(readyAt)) : unknown,
    };
    const advice = kind === 'sign_in_throttled' || kind === 'recovery_started' ? kind : 'any';
    const text = [
      translate(language, `notice_${kind}`, values),
      '',
      translate(language, 'notice_when', values),
      translate(language, 'notice_from', values),
      '',
      translate(language, `notice_advice_${advice}`, values),
      '',
    ].join('\n');
    await outbox.queueMail(
      tx,
      { to: address.email, subject: translate(language, `notice_${kind}_subject`, values), text },
      { kind: `notice.${kind}`, userId: facts.userId },
    );
  }

  return { queueNotice };
}

export type SecurityNotices = ReturnType<typeof createSecurityNotices>;
