import type { BaseLogger } from 'pino';
import { ServiceError } from '../errors.js';

/** One mail: plain text, to one address. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** The same on every attempt at one message, so that mail systems can drop a duplicate. */
  messageId?: string;
}

/**
 * Where mail goes: SMTP (smtp-sender.ts) or, in development, the console (console-sender.ts).
 * `send` resolves once the server has taken the message; it throws 400 `email_address_rejected`
 * when the server refuses the address, 504 `MailTimeout` when it does not answer in time, and
 * 502 `mail_unavailable` for any other failure.
 */
export interface MailSender {
  send(message: MailMessage, log: BaseLogger): Promise<void>;
}

/**
 * The server did not answer within the timeout. `maybeSent` once the message itself was on its
 * way (a silence after the envelope): the server may have kept it, so it is not sent again.
 */
export class MailTimeout extends ServiceError {
  constructor(
    timeoutMs: number,
    readonly maybeSent: boolean,
  ) {
    super(
      'mail_timeout',
      `the mail server did not answer within ${timeoutMs / 1000} s; the code may still arrive, or ask again in a few minutes`,
      60,
    );
  }
}

/** An address as logs show it: the first character of the local part and the domain (`a…@example.com`). */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at <= 0 ? '…' : `${email[0]}…${email.slice(at)}`;
}
