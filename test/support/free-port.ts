import { type AddressInfo, createServer } from 'node:net';

/**
 * A port nothing listens on at the moment, for an example app whose URIs are registered with the
 * service before it starts (its client_id is one of its settings).
 */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
