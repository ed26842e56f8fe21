import { createTransport } from 'nodemailer';
import { ServiceError } from '../errors.js';
import { type MailSender, MailTimeout, maskEmail } from './mail-sender.js';

export interface SmtpSettings {
  /** smtp://user:pass@host:587 (STARTTLS when the server offers it) or smtps://… (TLS from the start). */
  url: string;
  from: string;
  timeoutMs: number;
}

/** The domain of MAIL_FROM (`MFA <no-reply@mfa.example>`), where Message-IDs are made. */
function domainOf(from: string): string {
  return /@([^\s>]+)/.exec(from)?.[1] ?? 'localhost';
}

/** nodemailer's codes for a connection that could not be made or was lost. */
const TIMEOUT_CODES = new Set(['ETIMEDOUT']);

/**
 * Mail through an SMTP server with nodemailer: one connection per message (codes are rare), each
 * step bounded by `timeoutMs`, and the whole send by it too, so that a server that accepts the
 * connection and then says nothing cannot hold a request.
 */
export function createSmtpSender({ url, from, timeoutMs }: SmtpSettings): MailSender {
  const transport = createTransport({
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
  });
  return {
    async send(message, log) {
      const started = performance.now();
      const to = maskEmail(message.to);
      let timer: NodeJS.Timeout | undefined;
      const overall = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new MailTimeout(timeoutMs)), timeoutMs);
      });
      try {
        const { messageId, ...content } = message;
        const sending = transport.sendMail({
          from,
          ...content,
          ...(messageId && { messageId: `<${messageId}@${domainOf(from)}>` }),
        });
        await Promise.race([sending, overall]);
        log.info({ to, ms: Math.round(performance.now() - started) }, 'mail sent');
      } catch (error) {
        if (error instanceof MailTimeout) {
          log.warn({ to, timeoutMs }, 'mail server did not answer in time');
          throw error;
        }
        const { code, responseCode } = error as { code?: string; responseCode?: number };
        if (code !== undefined && TIMEOUT_CODES.has(code)) {
          log.warn({ to, code }, 'mail server did not answer in time');
          throw new MailTimeout(timeoutMs);
        }
        if (code === 'EENVELOPE' && responseCode !== undefined && responseCode >= 500) {
          log.info({ to, responseCode }, 'mail server refused the address');
          throw new ServiceError(
            'email_address_rejected',
            'the mail server refused this address; check it, or use another',
          );
        }
        log.error({ to, code, responseCode, err: error }, 'mail not sent');
        throw new ServiceError(
          'mail_unavailable',
          'the mail server could not take the message; try again in a few minutes',
          60,
        );
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
