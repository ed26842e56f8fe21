// A resource server protected by this service's tokens: verifies them against the JWKS, asks per
// route for an acr and a freshness, and answers RFC 9470's step-up challenge when they fall short.
//   ISSUER=http://127.0.0.1:8000 PORT=9000 node --import tsx examples/resource-server.ts
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/** What a route asks of the login behind a token. */
interface Policy {
  /** The weakest acr accepted: aal1 (password), aal2 (a second factor), phr (a passkey). */
  acr: 'aal1' | 'aal2' | 'phr';
  /** The oldest login accepted, in seconds since its auth_time. */
  maxAgeSeconds?: number;
}

const ACR_STRENGTH = ['aal1', 'aal2', 'phr'];
const ROUTES: Record<string, Policy> = {
  '/profile': { acr: 'aal1' },
  '/payments': { acr: 'aal2', maxAgeSeconds: 600 },
};

export function createResourceServer({ issuer, jwksUri }: { issuer: string; jwksUri: string }): Server {
  // Fetched once, cached, and fetched again when a token names a key it has not seen (rotation).
  const keys = createRemoteJWKSet(new URL(jwksUri));

  return createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const policy = ROUTES[request.url ?? ''];
    if (!policy) return send(response, 404, { error: 'not_found' });
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token) {
      // RFC 6750 §3.1: a request without credentials gets the challenge alone, no error code.
      response.setHeader('www-authenticate', 'Bearer');
      return send(response, 401, { error_description: 'send an access token: Authorization: Bearer <token>' });
    }
    let claims: { sub?: string; acr?: unknown; auth_time?: unknown };
    try {
      ({ payload: claims } = await jwtVerify(token, keys, { issuer, audience: issuer, typ: 'at+jwt' }));
    } catch {
      response.setHeader('www-authenticate', 'Bearer error="invalid_token"');
      return send(response, 401, { error: 'invalid_token' });
    }
    const strongEnough = ACR_STRENGTH.indexOf(String(claims.acr)) >= ACR_STRENGTH.indexOf(policy.acr);
    const age = Math.floor(Date.now() / 1000) - Number(claims.auth_time);
    if (!strongEnough || (policy.maxAgeSeconds !== undefined && !(age <= policy.maxAgeSeconds))) {
      // RFC 9470 §3: say what would do; the client logs in again with these acr_values and max_age.
      const maxAge = policy.maxAgeSeconds === undefined ? '' : `, max_age=${policy.maxAgeSeconds}`;
      response.setHeader(
        'www-authenticate',
        `Bearer error="insufficient_user_authentication", acr_values="${policy.acr}"${maxAge}`,
      );
      return send(response, 401, { error: 'insufficient_user_authentication' });
    }
    return send(response, 200, { route: request.url, user: claims.sub });
  });
}

function send(response: ServerResponse, status: number, body: object) {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  const issuer = process.env.ISSUER ?? 'http://127.0.0.1:8000';
  const port = Number(process.env.PORT ?? 9000);
  createResourceServer({ issuer, jwksUri: `${issuer}/.well-known/jwks.json` }).listen(port, '127.0.0.1', () => {
    process.stdout.write(`resource server on http://127.0.0.1:${port}, trusting ${issuer}\n`);
  });
}
