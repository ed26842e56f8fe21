import type { BaseLogger } from 'pino';
import type { Clock } from '../clock.js';
import { type ErrorCode, ServiceError } from '../errors.js';
import type { SmsSender } from './sms-sender.js';

export type AttemptOutcome = 'sent' | 'refused' | 'failed' | 'timeout';

/** One provider asked once: for the metrics, which carry the provider's name. */
export interface SmsAttempt {
  provider: string;
  outcome: AttemptOutcome;
  durationSeconds: number;
}

/**
 * Delivers a message through the primary provider, or the fallback. Throws the sender errors of
 * SmsSender; reports every provider it asked to `onAttempt`.
 */
export interface SmsDelivery {
  deliver(
    message: { toE164: string; body: string },
    log: BaseLogger,
    onAttempt: (attempt: SmsAttempt) => void,
  ): Promise<void>;
}

/** How each sender error is counted. */
const OUTCOMES: Partial<Record<ErrorCode, AttemptOutcome>> = {
  phone_number_rejected: 'refused',
  sms_unavailable: 'failed',
  sms_timeout: 'timeout',
};

/** CONTRACT §15: after this many primary failures in a row, the fallback goes first … */
const FAILURES_TO_SWITCH = 5;
/** … for this long; then the primary is asked first again (and one more failure switches back). */
const SWITCH_SECONDS = 60;

/**
 * CONTRACT §15 failover. The fallback gets the same message when the first provider fails or does
 * not answer, never when it refuses the number. A timeout fails over too: the user waits for a code
 * either way, and the same code through two providers is at worst a duplicate text, where an error
 * would make them ask again and pay for a second code. If any provider timed out and none
 * delivered, the answer is the timeout (the message may still arrive). The run of failures is
 * counted in this process: each node judges the primary by what it sees.
 */
export function createSmsDelivery({
  primary,
  fallback,
  clock,
}: {
  primary: SmsSender;
  fallback?: SmsSender;
  clock: Clock;
}): SmsDelivery {
  let primaryFailuresInARow = 0;
  let fallbackFirstUntilMs = Number.NEGATIVE_INFINITY;

  async function attempt(
    sender: SmsSender,
    message: { toE164: string; body: string },
    log: BaseLogger,
    onAttempt: (attempt: SmsAttempt) => void,
  ): Promise<{ outcome: AttemptOutcome; error?: unknown }> {
    const startedAt = performance.now();
    const report = (outcome: AttemptOutcome) =>
      onAttempt({ provider: sender.provider, outcome, durationSeconds: (performance.now() - startedAt) / 1000 });
    try {
      await sender.send(message, log);
      report('sent');
      return { outcome: 'sent' };
    } catch (error) {
      const outcome = (error instanceof ServiceError && OUTCOMES[error.code]) || 'failed';
      report(outcome);
      return { outcome, error };
    }
  }

  function notePrimary(outcome: AttemptOutcome, log: BaseLogger) {
    if (outcome === 'sent' || outcome === 'refused') {
      // A refusal is an answer: the provider is up.
      primaryFailuresInARow = 0;
      return;
    }
    primaryFailuresInARow += 1;
    if (primaryFailuresInARow >= FAILURES_TO_SWITCH) {
      fallbackFirstUntilMs = clock.now().getTime() + SWITCH_SECONDS * 1000;
      log.warn(
        { provider: primary.provider, failuresInARow: primaryFailuresInARow, fallback: fallback?.provider },
        `the SMS provider keeps failing: the fallback goes first for ${SWITCH_SECONDS} s`,
      );
    }
  }

  return {
    async deliver(message, log, onAttempt) {
      const order =
        fallback === undefined
          ? [primary]
          : clock.now().getTime() < fallbackFirstUntilMs
            ? [fallback, primary]
            : [primary, fallback];
      let timedOut: unknown;
      let lastError: unknown;
      for (const [index, sender] of order.entries()) {
        const { outcome, error } = await attempt(sender, message, log, onAttempt);
        if (sender === primary && fallback !== undefined) notePrimary(outcome, log);
        if (outcome === 'sent') return;
        // A refused number stays refused: no failover. But an earlier silence may still deliver.
        if (outcome === 'refused') throw timedOut ?? error;
        if (outcome === 'timeout') timedOut = error;
        lastError = error;
        const next = order[index + 1];
        if (next) log.warn({ provider: sender.provider, outcome, next: next.provider }, 'SMS failing over');
      }
      throw timedOut ?? lastError;
    },
  };
}
