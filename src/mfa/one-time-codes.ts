import { randomUUID } from 'node:crypto';
import type { BaseLogger } from 'pino';
import type { RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import type { SmsLimits } from '../config.js';
import { keyedHash, randomDigits, safeEqual } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Language } from '../i18n/messages.js';
import { type MailSender, maskEmail } from '../mail/mail-sender.js';
import type { ServiceMetrics, SmsOutcome } from '../metrics/metrics.js';
import type { SmsDelivery } from '../sms/failover.js';
import { maskPhone } from '../sms/sms-sender.js';
import { type CodePurpose, type EmailPurpose, isEmailPurpose, type SmsPurpose } from '../store/database.js';
import type { Store } from '../store/store.js';
import { languageFor } from '../users/languages.js';
import { type CountryBudgets, type CountryCap, countryScope, startOfHour } from './country-budgets.js';
import { countryKeyOf, type PhoneNumber, rangeOf } from './phone-numbers.js';

export type CodeCheck =
  /** `destination`: where the code went (the SMS number's digits, or the address). */
  | { outcome: 'ok'; destination: string }
  | { outcome: 'none' | 'wrong' | 'expired' | 'dead' | 'spent'; description: string };

export type SendOutcome = { outcome: 'sent' } | { outcome: 'cooldown'; retryAfterSeconds: number };

export interface OneTimeCodeDeps {
  store: Store;
  /** The provider, with its fallback when one is set. */
  sms: SmsDelivery;
  countries: CountryBudgets;
  clock: Clock;
  /** Keys the code hashes, so that the database alone cannot reveal a code. */
  codeKey: Buffer;
  limits: SmsLimits;
  /** The SMS, in `language` (CONTRACT §22: the request's ui_locales, the user's, its Accept-Language). */
  smsText: (code: string, language: Language) => string;
  /** Where codes by mail go (CONTRACT §20, email codes as a second factor). */
  mail: MailSender;
  /** The mail of a code, in `language`, chosen as the SMS's. */
  emailText: (code: string, language: Language) => { subject: string; text: string };
  metrics: ServiceMetrics;
}

const HOUR_MS = 3_600_000;

/** An hourly SMS counter: its scope, its limit, and what the refusal says was reached. */
interface Cap {
  scope: string;
  limit: number;
  reached: string;
}

/** One code on its way, as sendThrough sends it on any channel. */
interface Sending {
  userId: string;
  purpose: CodePurpose;
  /** Where it goes: the SMS number's digits, or the address. */
  destination: string;
  caps: Cap[];
  deliver(code: string): Promise<void>;
  /** True for a failure after which the message may still arrive (a timeout). */
  isUnanswered(error: unknown): boolean;
  /** The error that refuses a send past `cap`. */
  refuse(cap: Cap, retryAfterSeconds: number): Promise<ServiceError>;
  onCooldown(): void;
  log: BaseLogger;
  logged: Record<string, string>;
}

/**
 * True for a send the channel did not answer in time (504 `sms_timeout`, `mail_timeout`): its
 * message may still arrive (CONTRACT §15), so its code is kept and the cooldown and caps stay spent.
 */
export function isUnanswered(error: unknown): boolean {
  return error instanceof ServiceError && (error.code === 'sms_timeout' || error.code === 'mail_timeout');
}

/** Thrown inside the caps transaction when a cap refuses the send, so that the transaction rolls back. */
class CapReached extends Error {
  constructor(readonly cap: Cap) {
    super(`hourly SMS cap reached: ${cap.scope}`);
  }
}

/** One-time codes by SMS and by mail: sending them within the cooldown and caps, and spending them once. */
export function createOneTimeCodes({
  store,
  sms,
  countries,
  clock,
  codeKey,
  limits,
  smsText,
  mail,
  emailText,
  metrics,
}: OneTimeCodeDeps) {
  /**
   * Sends a fresh code for `purpose` to `phone` and stores it hashed, replacing the earlier one.
   * Answers `cooldown` inside the resend window; throws `sms_rate_limited` past an hourly cap,
   * `sms_country_paused` while enrolments to the country are paused, `phone_number_not_allowed`
   * outside the allowlist, or the sender's error (then nothing is kept).
   */
  async function sendCode(
    userId: string,
    purpose: SmsPurpose,
    phone: PhoneNumber,
    context: RequestContext,
  ): Promise<SendOutcome> {
    const { log } = context;
    const count = (outcome: SmsOutcome) => metrics.smsSent(purpose, phone.callingCode, outcome, 'none');
    const allowed = limits.allowedCountries;
    if (allowed && !phone.possibleCountries.some((country) => allowed.includes(country))) {
      count('suppressed_country');
      throw new ServiceError('phone_number_not_allowed', 'SMS to this country is not enabled on this service');
    }
    const now = clock.now();
    const countryCap =
      purpose === 'enrol'
        ? await countries.enrolmentCap(countryKeyOf(phone), now).catch((error: unknown) => {
            if (error instanceof ServiceError && error.code === 'sms_country_paused') count('suppressed_paused');
            throw error;
          })
        : undefined;
    return sendThrough(
      {
        userId,
        purpose,
        destination: phone.digits,
        caps: capsFor(userId, phone, countryCap),
        deliver: async (code) =>
          sms.deliver(
            { toE164: phone.e164, body: smsText(code, await languageFor(store, userId, context)) },
            log,
            (attempt) =>
              metrics.smsSent(purpose, phone.callingCode, attempt.outcome, attempt.provider, attempt.durationSeconds),
          ),
        isUnanswered,
        async refuse(cap, retryAfterSeconds) {
          if (countryCap?.isPauseThreshold && cap.scope === countryScope(countryCap.country)) {
            count('suppressed_paused');
            return countries.pauseCountry(countryCap, now, userId, context);
          }
          log.info({ purpose, to: maskPhone(phone.digits), cap: cap.scope.split(':')[0] }, 'hourly SMS cap reached');
          count('suppressed_cap');
          return new ServiceError(
            'sms_rate_limited',
            `${cap.reached}; try again in ${retryAfterSeconds} s`,
            retryAfterSeconds,
          );
        },
        onCooldown: () => count('suppressed_cooldown'),
        log,
        logged: { purpose, to: maskPhone(phone.digits) },
      },
      now,
    );
  }

  /**
   * CONTRACT §20: the same for a code by mail (email codes as a second factor): one per user and
   * purpose, the same cooldown, lifetime and attempts, hourly caps per account and per address.
   * Throws 429 `email_rate_limited`, or the mail sender's error (then nothing is kept, unless the
   * server did not answer: the mail may still arrive, and its code then works).
   */
  async function sendEmailCode(
    userId: string,
    purpose: EmailPurpose,
    email: string,
    context: RequestContext,
  ): Promise<SendOutcome> {
    const now = clock.now();
    return sendThrough(
      {
        userId,
        purpose,
        destination: email,
        caps: [
          {
            scope: `email-user:${userId}`,
            limit: limits.perUserPerHour,
            reached: 'this account has had its hourly mail',
          },
          {
            // Keyed: the counters never hold an address.
            scope: `email-address:${keyedHash(codeKey, 'email-destination', email.toLowerCase())}`,
            limit: limits.perNumberPerHour,
            reached: 'this address has had its hourly mail',
          },
        ],
        deliver: async (code) =>
          mail.send({ to: email, ...emailText(code, await languageFor(store, userId, context)) }, context.log),
        isUnanswered,
        refuse: async (cap, retryAfterSeconds) =>
          new ServiceError(
            'email_rate_limited',
            `${cap.reached}; try again in ${retryAfterSeconds} s`,
            retryAfterSeconds,
          ),
        onCooldown: () => undefined,
        log: context.log,
        logged: { purpose, to: maskEmail(email) },
      },
      now,
    );
  }

  /**
   * What every channel shares (CONTRACT §5): the resend cooldown and the hourly caps reserved in
   * one transaction, the code delivered, and then kept hashed; a refusal or failure gives the slot
   * and the counts back, an unanswered delivery keeps them and the code.
   */
  async function sendThrough(send: Sending, now: Date): Promise<SendOutcome> {
    const { userId, purpose, caps } = send;
    const reservationId = randomUUID();
    const hour = startOfHour(now);
    const reserved = await store
      .transaction(async (tx) => {
        if (!(await tx.smsQuota.reserveCooldown({ userId, purpose, reservationId }, now, limits.cooldownSeconds))) {
          return false;
        }
        for (const cap of caps) {
          // Throwing rolls back the cooldown slot and the counters taken above.
          if (!(await tx.smsQuota.incrementCounter(cap.scope, hour, cap.limit))) throw new CapReached(cap);
        }
        return true;
      })
      .catch(async (error: unknown) => {
        if (!(error instanceof CapReached)) throw error;
        throw await send.refuse(error.cap, Math.ceil((hour.getTime() + HOUR_MS - now.getTime()) / 1000));
      });
    if (!reserved) {
      const sentAt = (await store.smsQuota.findCooldown(userId, purpose)) ?? now;
      const waitMs = sentAt.getTime() + limits.cooldownSeconds * 1000 - now.getTime();
      send.onCooldown();
      return { outcome: 'cooldown', retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }

    const code = randomDigits(6);
    const keepCode = async () => {
      const id = randomUUID();
      const expiresAt = new Date(now.getTime() + limits.codeTtlSeconds * 1000);
      await store.codes.replaceCode(
        {
          id,
          userId,
          purpose,
          phoneNumber: send.destination,
          codeHash: keyedHash(codeKey, id, code),
          expiresAt,
          reservationId,
        },
        now,
      );
    };
    try {
      await send.deliver(code);
    } catch (error) {
      if (send.isUnanswered(error)) {
        // The message may still arrive: the cooldown and the caps stay spent, and the code is kept,
        // so that it works if it does.
        await keepCode();
        throw error;
      }
      // A refusal or a failure leaves nothing half-done: the slot and the counts are given back.
      await store.transaction(async (tx) => {
        await tx.smsQuota.releaseCooldown(userId, purpose, reservationId);
        for (const { scope } of caps) await tx.smsQuota.decrementCounter(scope, hour);
      });
      throw error;
    }
    await keepCode();
    send.log.info(send.logged, 'one-time code sent');
    return { outcome: 'sent' };
  }

  /**
   * CONTRACT §15: enrolment sends (to a number not yet proved) and login sends (to the user's own
   * verified number) have separate budgets, so that no number of other accounts enrolling a
   * user's number can stop that user's login codes. Enrolments (those with a `countryCap`) also
   * count per country and per number range (sequential pumping walks a range). The global ceiling
   * bounds the bill.
   */
  function capsFor(userId: string, phone: PhoneNumber, countryCap: CountryCap | undefined): Cap[] {
    const caps: Cap[] = [
      { scope: `user:${userId}`, limit: limits.perUserPerHour, reached: 'this account has had its hourly SMS' },
    ];
    if (countryCap) {
      const { country } = countryCap;
      caps.push(
        {
          scope: `number:${keyedHash(codeKey, 'sms-destination', phone.digits)}`,
          limit: limits.perNumberPerHour,
          reached: 'this phone number has had its hourly enrolment SMS',
        },
        {
          // Keyed like the number: the counters never hold a number's digits.
          scope: `range:${keyedHash(codeKey, 'sms-range', rangeOf(phone))}`,
          limit: limits.perRangePerHour,
          reached: 'numbers of this range (all digits but the last 2) have had their hourly enrolment SMS',
        },
        {
          scope: countryScope(country),
          limit: countryCap.limit,
          reached: `enrolment SMS to ${country} have reached their hourly budget`,
        },
        {
          scope: 'enrol',
          limit: limits.enrolmentPerHour,
          reached: 'the service has sent its hourly enrolment SMS',
        },
      );
    }
    caps.push({ scope: 'global', limit: limits.globalPerHour, reached: 'the service has sent its hourly SMS' });
    return caps;
  }

  /** Spends the user's code for `purpose` if `code` matches; never throws for a bad code. */
  async function checkCode(userId: string, purpose: CodePurpose, code: string): Promise<CodeCheck> {
    const check = await compareCode(userId, purpose, code);
    metrics.codeChecked(purpose, check.outcome, isEmailPurpose(purpose) ? 'email' : 'sms');
    return check;
  }

  async function compareCode(userId: string, purpose: CodePurpose, code: string): Promise<CodeCheck> {
    const pending = await store.codes.findCode(userId, purpose);
    if (!pending) return { outcome: 'none', description: 'no code is pending; request a new one' };
    if (pending.usedAt) return { outcome: 'spent', description: 'the code was already used' };
    const now = clock.now();
    if (pending.expiresAt <= now) return { outcome: 'expired', description: 'the code has expired' };
    // Counted before the compare so a flood of guesses burns attempts even when they race.
    const attempt = await store.codes.countAttempt(pending.id, limits.maxAttempts);
    if (attempt === undefined) {
      return { outcome: 'dead', description: 'too many attempts at this code; request a new one' };
    }
    // CONTRACT §5: the resend cooldown holds only while the code sent is alive. Once it is spent
    // or dead, the next request sends a fresh one at once.
    const endCooldown = () => store.smsQuota.releaseCooldown(userId, purpose, pending.reservationId ?? '');
    if (!safeEqual(pending.codeHash, keyedHash(codeKey, pending.id, code))) {
      if (attempt >= limits.maxAttempts) await endCooldown();
      return { outcome: 'wrong', description: 'the code is wrong' };
    }
    if (!(await store.codes.markUsed(pending.id, now))) {
      return { outcome: 'spent', description: 'the code was already used' };
    }
    await endCooldown();
    return { outcome: 'ok', destination: pending.phoneNumber };
  }

  return { sendCode, sendEmailCode, checkCode };
}

export type OneTimeCodes = ReturnType<typeof createOneTimeCodes>;
