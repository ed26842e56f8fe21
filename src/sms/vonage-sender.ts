import type { VonageConfig } from '../config.js';
import { ServiceError } from '../errors.js';
import { postToProvider } from './provider-request.js';
import { maskPhone, type SmsSender } from './sms-sender.js';

/**
 * Vonage SMS API statuses that mean "this number cannot get SMS": 6 invalid message (an
 * unrecognised number prefix), 7 number barred, 29 non-whitelisted destination, 33 number
 * de-activated. Every other non-zero status (1 throttled, 5 internal error, 4 bad credentials,
 * 9 out of credit …) is a failure of ours or theirs, which another provider may not share.
 */
const REFUSED_NUMBER_STATUSES = new Set(['6', '7', '29', '33']);

/** GSM 7-bit's common characters; any other needs `type=unicode`, or Vonage would garble it. */
const GSM_TEXT = /^[\n\r\x20-\x5a\x61-\x7a£¥èéùìòÇØøÅåÉÆæßÄÖÑÜ§¿äöñüà_!?]*$/;

interface VonageMessage {
  status?: unknown;
  'error-text'?: unknown;
}

/**
 * Sends through Vonage's SMS API: POST {apiUrl}/sms/json with api_key, api_secret, from, to (digits,
 * no `+`) and text as a form. Vonage answers 200 with `{"message-count", "messages":[{status, …}]}`;
 * status "0" in every message is success.
 */
export function createVonageSender(config: VonageConfig, provider = 'vonage'): SmsSender {
  const url = `${config.apiUrl}/sms/json`;
  return {
    provider,
    async send({ toE164, body }, log) {
      const to = maskPhone(toE164);
      const { ok, status, answer } = await postToProvider(
        {
          url,
          form: {
            api_key: config.apiKey,
            api_secret: config.apiSecret,
            from: config.from,
            to: toE164.replace(/^\+/, ''),
            text: body,
            ...(GSM_TEXT.test(body) ? {} : { type: 'unicode' }),
          },
          timeoutMs: config.timeoutMs,
        },
        log,
        { provider, to },
      );
      const messages = ok ? (answer as { messages?: unknown } | undefined)?.messages : undefined;
      if (!Array.isArray(messages) || messages.length === 0) {
        log.error({ to, provider, status }, 'vonage failed to send');
        throw new ServiceError('sms_unavailable', 'the SMS provider failed to send the message; try again later');
      }
      const failed = (messages as VonageMessage[]).find((message) => String(message.status) !== '0');
      if (!failed) return;
      const vonageStatus = String(failed.status);
      // Digits masked: an error text may quote the number.
      const errorText =
        typeof failed['error-text'] === 'string' ? failed['error-text'].replace(/\d{5,}/g, '…') : undefined;
      if (REFUSED_NUMBER_STATUSES.has(vonageStatus)) {
        log.info({ to, provider, vonageStatus, errorText }, 'vonage refused the number');
        throw new ServiceError(
          'phone_number_rejected',
          `the SMS provider refused this number (Vonage status ${vonageStatus}); use another mobile number`,
        );
      }
      log.error({ to, provider, vonageStatus, errorText }, 'vonage failed to send');
      throw new ServiceError('sms_unavailable', 'the SMS provider failed to send the message; try again later');
    },
  };
}
