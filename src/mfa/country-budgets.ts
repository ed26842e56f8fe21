import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import type { SmsLimits } from '../config.js';
import { ServiceError } from '../errors.js';
import type { Store } from '../store/store.js';

const HOUR_MS = 3_600_000;
/** The anomaly pause compares this hour with the average hour of the 7 days before it. */
const HISTORY_HOURS = 7 * 24;

/** The `sms_counter` scope of a country's enrolment sends. */
export function countryScope(country: string): string {
  return `country:${country}`;
}

/** The start of the clock hour `at` falls in: every SMS budget counts per clock hour. */
export function startOfHour(at: Date): Date {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
}

/** How long a country's counters are kept: the anomaly pause's history. */
export function historyStart(hour: Date): Date {
  return new Date(hour.getTime() - HISTORY_HOURS * HOUR_MS);
}

/** A country's cap on enrolment SMS this hour, counted with the other caps in one-time-codes.ts. */
export interface CountryCap {
  country: string;
  limit: number;
  /** True when `limit` is the anomaly threshold: a send refused by it pauses the country. */
  isPauseThreshold: boolean;
  averagePerHour: number;
}

export interface CountryStatus {
  country: string;
  /** Enrolment SMS sent to it this clock hour, and its budget. */
  sentThisHour: number;
  hourlyLimit: number;
  /** Its hourly average over the 7 days before this hour, and the count that would pause it. */
  averagePerHour: number;
  pauseThreshold: number;
  /** While paused (and not resumed): until when. */
  pausedUntil?: Date;
  /** When an operator resumed it within the current pause. */
  resumedAt?: Date;
}

/**
 * CONTRACT §15: per-country hourly budgets of enrolment SMS, and the anomaly pause. A country
 * whose enrolment sends this clock hour would pass max(floor, multiple × its hourly average over
 * the 7 days before) pauses until the hour ends or an operator resumes it. Both are counted with
 * the other caps, in one-time-codes.ts: the database settles racing sends, so none gets past them.
 */
export function createCountryBudgets({
  store,
  clock,
  limits,
  audit,
}: {
  store: Store;
  clock: Clock;
  limits: Pick<SmsLimits, 'perCountryPerHour' | 'anomaly'>;
  audit: AuditTrail;
}) {
  function hourlyLimitFor(country: string): number {
    return limits.perCountryPerHour.byCountry[country] ?? limits.perCountryPerHour.default;
  }

  function thresholdFor(historySends: number): { averagePerHour: number; pauseThreshold: number } {
    const averagePerHour = historySends / HISTORY_HOURS;
    return {
      averagePerHour,
      pauseThreshold: Math.max(limits.anomaly.floor, Math.ceil(limits.anomaly.multiple * averagePerHour)),
    };
  }

  /**
   * The country's cap on enrolment SMS this hour: its budget, or its anomaly threshold when that
   * is not higher. Throws 429 `sms_country_paused` while it is paused. An operator's resume lifts
   * the threshold for the rest of the hour; the budget still bounds it.
   */
  async function enrolmentCap(country: string, now: Date): Promise<CountryCap> {
    const budget = hourlyLimitFor(country);
    const pause = await store.smsCountryPauses.findCountryPause(country);
    if (pause && pause.pausedUntil > now) {
      if (pause.resumedAt) return { country, limit: budget, isPauseThreshold: false, averagePerHour: 0 };
      throw pausedError(country, pause.pausedUntil, now);
    }
    const hour = startOfHour(now);
    const { averagePerHour, pauseThreshold } = thresholdFor(
      await store.smsQuota.sumCounters(countryScope(country), historyStart(hour), hour),
    );
    const isPauseThreshold = pauseThreshold <= budget;
    return { country, limit: Math.min(pauseThreshold, budget), isPauseThreshold, averagePerHour };
  }

  /**
   * Pauses the country whose threshold the caps transaction refused to pass: records the pause and
   * its audit event, logs it, and returns the 429 `sms_country_paused` to answer.
   */
  async function pauseCountry(
    cap: CountryCap,
    now: Date,
    userId: string,
    context: RequestContext,
  ): Promise<ServiceError> {
    const { country, limit: threshold, averagePerHour } = cap;
    const hour = startOfHour(now);
    const pausedUntil = new Date(hour.getTime() + HOUR_MS);
    const sends = await store.smsQuota.findCounter(countryScope(country), hour);
    // Of several nodes tripping it at once, the one whose upsert won tells the operator, in the
    // pause's own transaction (the audit row carries the sms.country_paused webhook).
    const isNew = await store.transaction(async (tx) => {
      const created = await tx.smsCountryPauses.pauseCountry({ country, pausedAt: now, pausedUntil, sends, threshold });
      if (created) {
        const detail = {
          country,
          sends_this_hour: String(sends),
          threshold: String(threshold),
          paused_until: pausedUntil.toISOString(),
        };
        await audit.record('sms_country_paused', 'paused', { userId, context, detail }, tx);
      }
      return created;
    });
    if (isNew) {
      context.log.warn(
        { country, sends, threshold, averagePerHour, pausedUntil: pausedUntil.toISOString() },
        'enrolment SMS to a country paused: an unusual number this hour',
      );
    }
    return pausedError(country, pausedUntil, now);
  }

  /** Ends the country's running pause (the operator's `sms-resume`); false when none was running. */
  async function resume(country: string): Promise<boolean> {
    const resumed = await store.smsCountryPauses.resumeCountry(country, clock.now());
    if (resumed) await audit.record('sms_country_resumed', 'operator', { detail: { country } });
    return resumed;
  }

  /**
   * Every country with enrolment SMS in the last 7 days, a budget of its own or a pause: its
   * sends and budget this hour, its average and pause threshold, and its pause. By country.
   */
  async function listCountries(): Promise<CountryStatus[]> {
    const now = clock.now();
    const hour = startOfHour(now);
    const [counters, pauses] = await Promise.all([
      store.smsQuota.listCounters(countryScope(''), historyStart(hour)),
      store.smsCountryPauses.listCountryPauses(),
    ]);
    const countries = new Set([
      ...counters.map((counter) => counter.scope.slice(countryScope('').length)),
      ...Object.keys(limits.perCountryPerHour.byCountry),
      ...pauses.filter((pause) => pause.pausedUntil > now).map((pause) => pause.country),
    ]);
    return [...countries].sort().map((country) => {
      const own = counters.filter((counter) => counter.scope === countryScope(country));
      const sumOf = (list: typeof own) => list.reduce((total, counter) => total + counter.sends, 0);
      const pause = pauses.find((candidate) => candidate.country === country && candidate.pausedUntil > now);
      return {
        country,
        sentThisHour: sumOf(own.filter((counter) => counter.windowStart.getTime() === hour.getTime())),
        hourlyLimit: hourlyLimitFor(country),
        ...thresholdFor(sumOf(own.filter((counter) => counter.windowStart < hour))),
        pausedUntil: pause && !pause.resumedAt ? pause.pausedUntil : undefined,
        resumedAt: pause?.resumedAt,
      };
    });
  }

  /** The countries paused now, for the `mfa_sms_country_paused` gauge. */
  async function listPausedCountries(): Promise<string[]> {
    const now = clock.now();
    const pauses = await store.smsCountryPauses.listCountryPauses();
    return pauses.filter((pause) => pause.pausedUntil > now && !pause.resumedAt).map((pause) => pause.country);
  }

  return { enrolmentCap, pauseCountry, resume, listCountries, listPausedCountries };
}

function pausedError(country: string, pausedUntil: Date, now: Date): ServiceError {
  const retryAfterSeconds = Math.max(1, Math.ceil((pausedUntil.getTime() - now.getTime()) / 1000));
  return new ServiceError(
    'sms_country_paused',
    `enrolment SMS to ${country} are paused after an unusual number this hour; try again in ${retryAfterSeconds} s`,
    retryAfterSeconds,
  );
}

export type CountryBudgets = ReturnType<typeof createCountryBudgets>;
