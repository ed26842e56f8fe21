import type { SmsSender } from './sms-sender.js';

/**
 * The development sink: prints each message (code included) instead of sending it. It is the
 * delivery channel, not a log, and config refuses it when NODE_ENV=production.
 */
export function createConsoleSender(write: (line: string) => void): SmsSender {
  return {
    provider: 'console',
    async send({ toE164, body }) {
      write(`[console SMS] to ${toE164}: ${body}\n`);
    },
  };
}
