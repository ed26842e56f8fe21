// Serves the single-page app of this folder on its own origin: index.html with the settings written
// in, and app.ts bundled by esbuild in memory. Register the app first (README: Sign in from your app), then:
//   ISSUER=http://localhost:8000 CLIENT_ID=… PORT=5173 node --import tsx examples/spa/serve.ts
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export async function startSpa({
  issuer,
  clientId,
  port = 0,
}: {
  issuer: string;
  clientId: string;
  port?: number;
}): Promise<{ origin: string; close(): Promise<void> }> {
  const bundled = await build({
    entryPoints: [fileURLToPath(new URL('app.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    logLevel: 'warning',
  });
  const script = bundled.outputFiles[0]?.text ?? '';
  // `<` escaped: the JSON cannot end the script element it sits in.
  const settings = JSON.stringify({ issuer, clientId }).replaceAll('<', '\\u003c');
  const html = (await readFile(new URL('index.html', import.meta.url), 'utf8')).replace(
    'id="settings">{}<',
    `id="settings">${settings}<`,
  );
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    // The discovery document, the token and userinfo endpoints: fetched from the service's origin.
    `connect-src ${new URL(issuer).origin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
  ].join('; ');

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/' || path === '/callback' || path === '/popup-callback') {
      response.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': csp,
        'cache-control': 'no-store',
        // The code and state in the callbacks' URLs go to no one else.
        'referrer-policy': 'no-referrer',
      });
      return response.end(html);
    }
    if (path === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
      return response.end(script);
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    // localhost: a secure context (Web Crypto for PKCE) that is not the service's origin.
    origin: `http://localhost:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a browser's idle keep-alive connections would hold close() open
      }),
  };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  const issuer = process.env.ISSUER ?? 'http://localhost:8000';
  const { origin } = await startSpa({
    issuer,
    clientId: process.env.CLIENT_ID ?? '',
    port: Number(process.env.PORT ?? 5173),
  });
  process.stdout.write(`single-page app on ${origin}, signing in with ${issuer}\n`);
}
