import { lastCodeIn, startFakeServer } from './fake-provider.js';

export interface SentMessage {
  accountSid: string;
  authorization: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  /** The W3C trace context the service sent along, when tracing is on. */
  traceparent?: string;
}

type Behaviour = 'deliver' | 'fail' | 'hang';

/**
 * A local stand-in for Twilio's Messages API (POST /2010-04-01/Accounts/{sid}/Messages.json):
 * records each message it accepts, and can refuse a number, fail with a 500, or never answer.
 */
export async function startFakeTwilio() {
  const messages: SentMessage[] = [];
  const refusedNumbers = new Map<string, number>();
  let behaviour: Behaviour = 'deliver';

  const server = await startFakeServer((request, response, raw, hold) => {
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(request.url ?? '');
    const form = new URLSearchParams(raw);
    const reply = (status: number, body: object) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || !match?.[1]) return reply(404, { code: 20404, message: 'not found', status: 404 });
    if (behaviour === 'fail') return reply(500, { code: 20500, message: 'internal server error', status: 500 });
    const to = form.get('To') ?? '';
    const take = () =>
      messages.push({
        accountSid: decodeURIComponent(match[1] ?? ''),
        authorization: request.headers.authorization ?? '',
        to,
        from: form.get('From') ?? undefined,
        messagingServiceSid: form.get('MessagingServiceSid') ?? undefined,
        body: form.get('Body') ?? '',
        traceparent: request.headers.traceparent as string | undefined,
      });
    // Hanging, the message is taken but never answered: it may well be delivered.
    if (behaviour === 'hang') {
      take();
      hold();
      return;
    }
    const refusal = refusedNumbers.get(to);
    if (refusal !== undefined) {
      return reply(400, { code: refusal, message: `The 'To' number ${to} is not valid.`, status: 400 });
    }
    take();
    reply(201, { sid: `SM${messages.length}`, status: 'queued', to, body: form.get('Body') });
  });

  return {
    url: server.url,
    messages,
    /** How many requests reached the fake, delivered or not. */
    get requestCount() {
      return server.requestCount;
    },
    /** Answer every message to `e164` with Twilio error `code` (21211: invalid 'To' number). */
    refuse(e164: string, code = 21211) {
      refusedNumbers.set(e164, code);
    },
    /** From now on: deliver (default), fail with a 500, or take the message and never answer. */
    behave(next: Behaviour) {
      behaviour = next;
    },
    /** The code in the last message sent to `e164` (with +), or throws. */
    lastCodeFor(e164: string): string {
      const texts = messages.filter((sent) => sent.to === e164).map((sent) => sent.body);
      return lastCodeIn(texts, e164);
    },
    close: () => server.close(),
  };
}

export type FakeTwilio = Awaited<ReturnType<typeof startFakeTwilio>>;
