import type { SmsProviderConfig } from '../config.js';
import { ServiceError } from '../errors.js';
import { maskPhone, type SmsSender } from './sms-sender.js';

/**
 * Twilio errors that mean "this number cannot get SMS", as opposed to a fault of ours or theirs:
 * invalid or unreachable To, region not enabled, unsubscribed, unroutable, not a mobile number,
 * landline or unreachable carrier.
 */
const REFUSED_NUMBER_CODES = new Set([21211, 21214, 21217, 21401, 21407, 21408, 21610, 21612, 21614, 30006]);

type TwilioConfig = Extract<SmsProviderConfig, { kind: 'twilio' }>;

/** Sends through Twilio's Messages API (POST /2010-04-01/Accounts/{sid}/Messages.json). */
export function createTwilioSender(config: TwilioConfig): SmsSender {
  const endpoint = `${config.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`).toString('base64')}`;
  const sender: Record<string, string> = config.from
    ? { From: config.from }
    : { MessagingServiceSid: config.messagingServiceSid ?? '' };

  return {
    async send({ toE164, body }, log) {
      const to = maskPhone(toE164);
      let response: Response;
      let answer: unknown;
      try {
        // One deadline for the answer and its body: a provider that stalls mid-body is as silent.
        const signal = AbortSignal.timeout(config.timeoutMs);
        response = await fetch(endpoint, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: new URLSearchParams({ To: toE164, ...sender, Body: body }),
          signal,
        });
        answer = await response.json().catch(() => undefined);
      } catch (error) {
        if (error instanceof DOMException && error.name === 'TimeoutError') {
          log.warn({ to, timeoutMs: config.timeoutMs }, 'twilio did not answer in time');
          throw new ServiceError(
            'sms_timeout',
            'the SMS provider did not answer in time; the message may still arrive: use its code, or ask again after the cooldown',
          );
        }
        log.error({ to, err: error }, 'twilio could not be reached');
        throw new ServiceError('sms_unavailable', 'the SMS provider could not be reached; try again later');
      }

      if (response.ok) return;
      const code = typeof answer === 'object' && answer !== null ? (answer as { code?: unknown }).code : undefined;
      if (response.status < 500 && typeof code === 'number' && REFUSED_NUMBER_CODES.has(code)) {
        log.info({ to, twilioCode: code }, 'twilio refused the number');
        throw new ServiceError('phone_number_rejected', `the SMS provider refused this number (Twilio error ${code})`);
      }
      log.error({ to, status: response.status, twilioCode: code }, 'twilio failed to send');
      throw new ServiceError('sms_unavailable', 'the SMS provider failed to send the message; try again later');
    },
  };
}
