import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * Forwards a local port to `target`; `cut()` refuses connections and drops the open ones, as a
 * database that went away would; `restore()` listens again on the same port.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  async function listen() {
    server = createServer((client) => {
      const upstream = createConnection(target);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
    const address = server.address();
    if (address && typeof address !== 'string') port = address.port;
  }

  await listen();
  return {
    get port() {
      return port;
    },
    async cut() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    },
    restore: listen,
  };
}
