import type { AddressInfo } from 'node:net';
import { createServer, type Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope's recipients. */
  to: string[];
  /** The message as sent: headers and body. */
  raw: string;
}

/**
 * A mail server in the test process, as an operator's relay would be: it takes mail on
 * 127.0.0.1 and keeps it (`accept`), refuses some recipients with 550, refuses every connection
 * with 554 (`refuse`, until `startAccepting`), or accepts connections and never says a word (`hang`).
 */
export async function startSmtpServer(
  options: { mode?: 'accept' | 'refuse' | 'hang'; refuseRecipient?: (address: string) => boolean } = {},
) {
  const received: ReceivedMail[] = [];
  const mode = options.mode ?? 'accept';
  let isRefusing = mode === 'refuse';
  const sockets = new Set<Socket>();
  let close: () => Promise<void>;
  let port: number;
  if (mode === 'hang') {
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    close = async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    };
  } else {
    const server = new SMTPServer({
      // Plain SMTP on loopback: no certificate to trust, no login to give.
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onConnect(_session, callback) {
        if (isRefusing) return callback(Object.assign(new Error('no mail today'), { responseCode: 554 }));
        callback();
      },
      onRcptTo(address, _session, callback) {
        if (options.refuseRecipient?.(address.address)) {
          return callback(Object.assign(new Error('no such mailbox'), { responseCode: 550 }));
        }
        callback();
      },
      onData(stream, session, callback) {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          raw += chunk;
        });
        stream.on('end', () => {
          received.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address), raw });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.server.address() as AddressInfo).port;
    close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The mail sent to `address`, in order. */
    mailTo: (address: string) => received.filter((mail) => mail.to.includes(address)),
    /** A refusing server takes mail from now on. */
    startAccepting() {
      isRefusing = false;
    },
    /** The mail sent to `address` once there are `count` of them (the outbox sends within a second or so). */
    async waitForMail(address: string, count = 1, timeoutMs = 10_000): Promise<ReceivedMail[]> {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const mails = received.filter((mail) => mail.to.includes(address));
        if (mails.length >= count) return mails;
        if (performance.now() > deadline) throw new Error(`${mails.length} of ${count} mails came to ${address}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /** The 6-digit code of the last mail to `address`; throws when there is none. */
    lastCodeFor(address: string): string {
      const mail = received.filter((candidate) => candidate.to.includes(address)).at(-1);
      const code = mail && /verification code is (\d{6})\b/.exec(mail.raw)?.[1];
      if (!code) throw new Error(`no code was mailed to ${address}`);
      return code;
    },
    close,
  };
}

export type SmtpTestServer = Awaited<ReturnType<typeof startSmtpServer>>;
