import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** What the receiver does with the n-th request (1-based) to a path: answer with a status, or never. */
export type Answer = number | 'hang';

/**
 * A webhook receiver, as a team running the service would write one: a local HTTP server that
 * records each request and answers as the test says (by default 204).
 */
export async function startWebhookReceiver(port = 0) {
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<ServerResponse>();
  let answer: (request: ReceivedWebhook, countForPath: number) => Answer = () => 204;

  const server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
    ) as Record<string, string>;
    const webhook = { path: request.url ?? '', headers, body };
    received.push(webhook);
    const status = answer(webhook, received.filter((other) => other.path === webhook.path).length);
    if (status === 'hang') {
      hanging.add(response);
      return;
    }
    response.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    received,
    /** The requests to `path`, in order. */
    at: (path: string) => received.filter((webhook) => webhook.path === path),
    answerWith(next: typeof answer) {
      answer = next;
    },
    /** Waits (real time, polling) until `path` has had `count` requests; throws after `timeoutMs`. */
    async waitFor(path: string, count: number, timeoutMs = 30_000): Promise<ReceivedWebhook[]> {
      await eventually(() => received.filter((webhook) => webhook.path === path).length >= count, timeoutMs);
      return received.filter((webhook) => webhook.path === path);
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/** Verifies the request as a receiver does, with the standardwebhooks package; returns the payload. */
export function verifyWebhook(secret: string, webhook: ReceivedWebhook): any {
  return new Webhook(secret).verify(webhook.body, webhook.headers);
}

/** Polls `condition` (real time) until it holds; throws after `timeoutMs`. */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not so within ${timeoutMs} ms`);
    await sleep(50);
  }
}
