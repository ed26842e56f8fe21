import type * as Nodemailer from 'nodemailer';
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

/** nodemailer's timeouts that come before anything of the message is sent: the setup's. */
const SETUP_TIMEOUTS = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT']);

const SOCKET_MARGIN_MS = 100;

/** A send's steps: setup (connect, greeting, TLS), the envelope, the message, the final answer. */
const STEPS = 4;

/** The longest a send may take however it goes: the message outbox's lease outlasts it. */
export const maxSendMs = (timeoutMs: number) => STEPS * timeoutMs;

/**
 * Mail through an SMTP server with nodemailer: one connection per message (codes are rare), each
 * step bounded by `timeoutMs` by nodemailer itself, which then closes the connection: a late 250
 * is never ignored. A timeout while setting up means nothing was sent; a later silence (or the
 * whole send outliving `maxSendMs`) may come after the server took the message: `maybeSent`.
 */
export function createSmtpSender({ url, from, timeoutMs }: SmtpSettings): MailSender {
  // nodemailer is loaded with the first message instead of at start: 1.2 MB of heap in a process
  // that has sent no mail yet (docs/PERFORMANCE.md). A failed load is tried again with the next.
  let transport: Promise<ReturnType<typeof Nodemailer.createTransport>> | undefined;
  const loadTransport = () =>
    (transport ??= import('nodemailer').then(
      ({ createTransport }) =>
        createTransport({
          url,
          connectionTimeout: timeoutMs,
          greetingTimeout: timeoutMs,
          // A little longer than the setup's: a server silent before its greeting is told by the setup's
          // own timeout (nothing sent), never by the socket's, which also runs from the connection.
          socketTimeout: timeoutMs + SOCKET_MARGIN_MS,
          dnsTimeout: timeoutMs,
        }),
      (error) => {
        transport = undefined;
        throw error;
      },
    ));
  return {
    async send(message, log) {
      const started = performance.now();
      const to = maskEmail(message.to);
      try {
        const { messageId, ...content } = message;
        await (await loadTransport()).sendMail({
          from,
          ...content,
          ...(messageId && { messageId: `<${messageId}@${domainOf(from)}>` }),
          // Aborting closes the connection: a server this slow gets no chance to answer 250 unheard.
          signal: AbortSignal.timeout(maxSendMs(timeoutMs)),
        });
        log.info({ to, ms: Math.round(performance.now() - started) }, 'mail sent');
      } catch (error) {
        const { code, responseCode, timeoutType } = error as {
          code?: string;
          responseCode?: number;
          timeoutType?: string;
        };
        if (code === 'ETIMEDOUT' || code === 'EABORT') {
          const maybeSent = !SETUP_TIMEOUTS.has(timeoutType ?? '');
          log.warn({ to, code, timeoutType, maybeSent }, 'mail server did not answer in time');
          throw new MailTimeout(timeoutMs, maybeSent);
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
      }
    },
  };
}
