import type { BaseLogger } from 'pino';

/**
 * Delivers one text message through one provider. Throws ServiceError `phone_number_rejected` when
 * the provider refuses the number, `sms_unavailable` when it fails, `sms_timeout` when it does not
 * answer in time.
 */
export interface SmsSender {
  /** The `provider` label of the SMS metrics: `twilio`, `twilio_fallback`, `vonage`, `console`. */
  readonly provider: string;
  send(message: { toE164: string; body: string }, log: BaseLogger): Promise<void>;
}

/** A phone number as logs may show it: its last four digits. */
export function maskPhone(phone: string): string {
  return `…${phone.slice(-4)}`;
}
