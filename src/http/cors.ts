import type { Clock } from '../clock.js';
import type { App } from './app-types.js';

/** How long a node keeps the list of allowed origins before reading it again. */
const ORIGINS_CACHE_MS = 10_000;

/**
 * CONTRACT §18's CORS: the token, userinfo and revocation endpoints answer browsers on the
 * origins clients registered as `web_origins` (a single-page app on another origin); the key set
 * and the discovery documents answer any origin. No other endpoint sends CORS headers, and none
 * allows credentials (cookies never go cross-origin).
 */
export function registerCors(
  app: App,
  {
    forClients,
    forAnyone,
    listWebOrigins,
    clock,
  }: { forClients: string[]; forAnyone: string[]; listWebOrigins: () => Promise<string[]>; clock: Clock },
) {
  let known: { origins: Set<string>; readAt: number } | undefined;
  async function isWebOrigin(origin: string): Promise<boolean> {
    const now = clock.now().getTime();
    if (!known || now - known.readAt > ORIGINS_CACHE_MS || now < known.readAt) {
      known = { origins: new Set(await listWebOrigins()), readAt: now };
    }
    return known.origins.has(origin);
  }

  /** The origin to allow for this route and Origin header, or undefined for none. */
  async function allowedOrigin(route: string | undefined, origin: string | undefined): Promise<string | undefined> {
    if (origin === undefined || route === undefined) return undefined;
    if (forAnyone.includes(route)) return '*';
    if (forClients.includes(route) && (await isWebOrigin(origin))) return origin;
    return undefined;
  }

  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    if (route === undefined || (!forClients.includes(route) && !forAnyone.includes(route))) return;
    reply.header('vary', 'origin');
    const allowed = await allowedOrigin(route, request.headers.origin);
    if (allowed) reply.header('access-control-allow-origin', allowed);
  });

  // The preflight a browser sends before a POST with JSON or an Authorization header.
  for (const path of [...forClients, ...forAnyone]) {
    app.options(path, { schema: { hide: true } }, async (_request, reply) => {
      if (reply.getHeader('access-control-allow-origin')) {
        reply.headers({
          'access-control-allow-methods': 'GET, POST',
          'access-control-allow-headers': 'authorization, content-type',
          'access-control-max-age': '600',
        });
      }
      return reply.code(204).send();
    });
  }
}
