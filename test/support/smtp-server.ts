import type { AddressInfo } from 'node:net';
import { createServer, type Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope's recipients. */
  to: string[];
  /** The message as sent: headers and body. */
  raw: string;
  /** The Subject header, its MIME encoded-words decoded. */
  subject: string;
  /** The body, its transfer encoding (quoted-printable or base64) decoded. */
  text: string;
}

/** A single-part message as nodemailer writes it, read back as a person sees it. */
function decodeMail(raw: string): { subject: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'im').exec(headers)?.[1] ?? '';
  const subject = header('Subject').replace(
    /=\?utf-8\?([QB])\?([^?]*)\?=\s?/gi,
    (_whole, kind: string, word: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(word, 'base64').toString('utf8')
        : decodeQuotedPrintable(word.replaceAll('_', ' ')),
  );
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  const text =
    encoding === 'base64'
      ? Buffer.from(body, 'base64').toString('utf8')
      : encoding === 'quoted-printable'
        ? decodeQuotedPrintable(body.replace(/=\r\n/g, ''))
        : body;
  return { subject, text: text.replace(/\r\n/g, '\n') };
}

function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index += 1) {
    const hex = text[index] === '=' ? text.slice(index + 1, index + 3) : '';
    if (/^[0-9A-F]{2}$/i.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      index += 2;
    } else bytes.push(...Buffer.from(text[index] ?? '', 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * A mail server in the test process, as an operator's relay would be: it takes mail on
 * 127.0.0.1 and keeps it (`accept`), refuses some recipients with 550, refuses every connection
 * with 554 (`refuse`, until `startAccepting`), or accepts connections and never says a word (`hang`).
 */
export async function startSmtpServer(
  options: {
    mode?: 'accept' | 'refuse' | 'hang';
    refuseRecipient?: (address: string) => boolean;
    /** A slow relay: how long it waits before its greeting, and before its 250 after the message. */
    greetingDelayMs?: number;
    scanDelayMs?: number;
  } = {},
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
        setTimeout(callback, options.greetingDelayMs ?? 0);
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
          // Kept once the message is in, whether or not the client is still there to hear the 250.
          received.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address), raw, ...decodeMail(raw) });
          setTimeout(callback, options.scanDelayMs ?? 0);
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
    /** The mail sent to `address`, in order (only the mail whose body matches `body`, when given). */
    mailTo: (address: string, body?: RegExp) =>
      received.filter((mail) => mail.to.includes(address) && (body === undefined || body.test(textOf(mail)))),
    /** A refusing server takes mail from now on. */
    startAccepting() {
      isRefusing = false;
    },
    /**
     * The mail sent to `address` whose subject matches `subject`, once there is one (the outbox
     * sends within a second or so); throws after 10 s.
     */
    async waitForMail(address: string, subject = /./): Promise<ReceivedMail> {
      const deadline = performance.now() + 10_000;
      for (;;) {
        const mail = received.find((candidate) => candidate.to.includes(address) && subject.test(candidate.subject));
        if (mail) return mail;
        if (performance.now() > deadline) throw new Error(`no mail to ${address} with the subject ${subject}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /** The 6-digit code of the last mail with a code to `address` (notices go there too); throws when there is none. */
    lastCodeFor(address: string): string {
      const codeMails = received.filter((candidate) => candidate.to.includes(address) && CODE.test(candidate.raw));
      const code = CODE.exec(codeMails.at(-1)?.raw ?? '')?.[1];
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

/** A code's sentence in a code's mail (English). */
const CODE = /verification code is (\d{6})\b/;

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
