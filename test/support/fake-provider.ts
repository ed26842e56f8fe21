import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The HTTP side of a fake SMS provider: a local server that reads each request's body and hands it
 * to `handle`, with `hold()` to take a request and never answer it (until `close`).
 */
export async function startFakeServer(
  handle: (request: IncomingMessage, response: ServerResponse, body: string, hold: () => void) => void,
) {
  const held = new Set<ServerResponse>();
  let requestCount = 0;
  const server = createServer(async (request, response) => {
    requestCount += 1;
    let body = '';
    for await (const chunk of request) body += chunk;
    handle(request, response, body, () => held.add(response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** How many requests reached the fake, delivered or not. */
    get requestCount() {
      return requestCount;
    },
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The 6-digit code in the last of `texts`, or throws naming `to`. */
export function lastCodeIn(texts: string[], to: string): string {
  const code = /\b(\d{6})\b/.exec(texts.at(-1) ?? '')?.[1];
  if (!code) throw new Error(`no code was sent to ${to}`);
  return code;
}
