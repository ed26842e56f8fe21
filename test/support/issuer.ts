import { type Service, type ServiceOptions, startService } from './service.js';
import { startTcpProxy } from './tcp-proxy.js';

/**
 * The service at a fixed ISSUER on `host`: client libraries check that the issuer they discover
 * is the one they asked for and call the URLs its metadata names, so ISSUER must be an address the
 * service answers on. The service listens on a port chosen at start; a proxy on a port known
 * beforehand stands in front of it.
 */
export async function startServiceAtIssuer(
  options: ServiceOptions = {},
  host = '127.0.0.1',
): Promise<{ service: Service; origin: string; close(): Promise<void> }> {
  const upstream = { host: '127.0.0.1', port: 0 };
  const proxy = await startTcpProxy(upstream);
  const origin = `http://${host}:${proxy.port}`;
  const service = await startService({ ...options, env: { ISSUER: origin, ...options.env } });
  upstream.port = Number(new URL(service.url).port);
  return {
    service,
    origin,
    async close() {
      await service.close();
      await proxy.cut();
    },
  };
}
