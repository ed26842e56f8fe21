import type { TwilioConfig } from '../config.js';
import { ServiceError } from '../errors.js';
import { postToProvider } from './provider-request.js';
import { maskPhone, type SmsSender } from './sms-sender.js';

/**
 * Twilio errors that mean "this number cannot get SMS", as opposed to a fault of ours or theirs:
 * invalid or unreachable To, region not enabled, unsubscribed, unroutable, not a mobile number,
 * landline or unreachable carrier.
 */
const REFUSED_NUMBER_CODES = new Set([21211, 21214, 21217, 21401, 21407, 21408, 21610, 21612, 21614, 30006]);

/**
 * Sends through Twilio's Messages API (POST /2010-04-01/Accounts/{sid}/Messages.json). `provider`
 * names the account in metrics and logs (`twilio`, or `twilio_fallback` for a second account).
 */
export function createTwilioSender(config: TwilioConfig, provider = 'twilio'): SmsSender {
  const url = `${config.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`).toString('base64')}`;
  const sender: Record<string, string> = config.from
    ? { From: config.from }
    : { MessagingServiceSid: config.messagingServiceSid ?? '' };

  return {
    provider,
    async send({ toE164, body }, log) {
      const to = maskPhone(toE164);
      const { status, ok, answer } = await postToProvider(
        {
          url,
          headers: { authorization },
          form: { To: toE164, ...sender, Body: body },
          timeoutMs: config.timeoutMs,
        },
        log,
        { provider, to },
      );
      if (ok) return;
      const code = typeof answer === 'object' && answer !== null ? (answer as { code?: unknown }).code : undefined;
      if (status < 500 && typeof code === 'number' && REFUSED_NUMBER_CODES.has(code)) {
        log.info({ to, provider, twilioCode: code }, 'twilio refused the number');
        throw new ServiceError(
          'phone_number_rejected',
          `the SMS provider refused this number (Twilio error ${code}); use another mobile number`,
        );
      }
      log.error({ to, provider, status, twilioCode: code }, 'twilio failed to send');
      throw new ServiceError('sms_unavailable', 'the SMS provider failed to send the message; try again later');
    },
  };
}
