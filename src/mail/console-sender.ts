import type { MailSender } from './mail-sender.js';

/** Development: mail is printed where the SMS console sink prints, never sent. */
export function createConsoleMailSender(write: (line: string) => void): MailSender {
  return {
    async send(message) {
      write(`[mail to ${message.to}] ${message.subject}\n${message.text}\n`);
    },
  };
}
