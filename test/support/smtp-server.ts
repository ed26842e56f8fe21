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
 * with 554 (`refuse`), or accepts connections and never says a word (`hang`).
 */
export async function startSmtpServer(
  options: { mode?: 'accept' | 'refuse' | 'hang'; refuseRecipient?: (address: string) => boolean } = {},
) {
  const received: ReceivedMail[] = [];
  const mode = options.mode ?? 'accept';
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
        if (mode === 'refuse') return callback(Object.assign(new Error('no mail today'), { responseCode: 554 }));
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
    /** The 6-digit code of the last mail to `address`; throws when there is none. */
    lastCodeFor(address: string): string {
      const mail = received.filter((candidate) => candidate.to.includes(address)).at(-1);
      const code = mail && /verification code is (\d{6})\b/.exec(mail.raw)?.[1];
      if (!code) throw new Error(`no code was mailed to ${address}`);
      return code;
    },
    /** The body of the last mail to `address`, decoded (nodemailer may send quoted-printable or base64). */
    lastTextFor(address: string): string {
      const mail = received.filter((candidate) => candidate.to.includes(address)).at(-1);
      if (!mail) throw new Error(`no mail was sent to ${address}`);
      return textOf(mail);
    },
    close,
  };
}

/** A plain-text mail's body as written, whatever transfer encoding carried it. */
export function textOf(mail: ReceivedMail): string {
  const split = mail.raw.indexOf('\r\n\r\n');
  const headers = mail.raw.slice(0, split);
  const body = mail.raw.slice(split + 4);
  const encoding = /^Content-Transfer-Encoding:\s*(\S+)/im.exec(headers)?.[1]?.toLowerCase();
  if (encoding === 'base64') return Buffer.from(body, 'base64').toString('utf8');
  if (encoding !== 'quoted-printable') return body;
  const bytes = body
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

export type SmtpTestServer = Awaited<ReturnType<typeof startSmtpServer>>;
