import { lastCodeIn, startFakeServer } from './fake-provider.js';

export interface VonageMessage {
  apiKey: string;
  apiSecret: string;
  from: string;
  /** As Vonage takes it: digits, no `+`. */
  to: string;
  text: string;
  contentType: string;
}

type Behaviour = 'deliver' | 'fail' | 'hang';

/**
 * A local stand-in for Vonage's SMS API (POST /sms/json, form or JSON body). It answers as Vonage
 * does: HTTP 200 with `{"message-count", "messages":[{status, …}]}`, status "0" for success, "4"
 * for wrong credentials, "5" when told to fail, or the status a refused number was given ("7":
 * number barred). It can also take a message and never answer.
 */
export async function startFakeVonage(credentials: { apiKey: string; apiSecret: string }) {
  const messages: VonageMessage[] = [];
  const refusedNumbers = new Map<string, string>();
  let behaviour: Behaviour = 'deliver';

  const server = await startFakeServer((request, response, raw, hold) => {
    const contentType = request.headers['content-type'] ?? '';
    const fields: Record<string, string> = contentType.startsWith('application/json')
      ? JSON.parse(raw)
      : Object.fromEntries(new URLSearchParams(raw));
    const reply = (status: string, extra: Record<string, string> = {}) => {
      const message = { to: fields.to ?? '', status, ...extra };
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ 'message-count': '1', messages: [message] }));
    };
    if (request.method !== 'POST' || request.url !== '/sms/json') {
      return response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    }
    if (fields.api_key !== credentials.apiKey || fields.api_secret !== credentials.apiSecret) {
      return reply('4', { 'error-text': 'Bad Credentials' });
    }
    if (behaviour === 'fail') return reply('5', { 'error-text': 'Internal Error' });
    const take = () =>
      messages.push({
        apiKey: fields.api_key ?? '',
        apiSecret: fields.api_secret ?? '',
        from: fields.from ?? '',
        to: fields.to ?? '',
        text: fields.text ?? '',
        contentType,
      });
    if (behaviour === 'hang') {
      take();
      hold();
      return;
    }
    const refusal = refusedNumbers.get(fields.to ?? '');
    if (refusal !== undefined) return reply(refusal, { 'error-text': 'Number barred.' });
    take();
    reply('0', {
      'message-id': `0C00000${messages.length}`,
      'remaining-balance': '15.53590000',
      'message-price': '0.03330000',
      network: '23410',
    });
  });

  return {
    url: server.url,
    messages,
    /** How many requests reached the fake, delivered or not. */
    get requestCount() {
      return server.requestCount;
    },
    /** Answer every message to `digits` (no +) with this status ("7": number barred). */
    refuse(digits: string, status = '7') {
      refusedNumbers.set(digits, status);
    },
    /** From now on: deliver (default), answer status "5", or take the message and never answer. */
    behave(next: Behaviour) {
      behaviour = next;
    },
    /** The code in the last message sent to `digits` (no +), or throws. */
    lastCodeFor(digits: string): string {
      return lastCodeIn(
        messages.filter((sent) => sent.to === digits).map((sent) => sent.text),
        `${digits} through Vonage`,
      );
    },
    close: () => server.close(),
  };
}

export type FakeVonage = Awaited<ReturnType<typeof startFakeVonage>>;
