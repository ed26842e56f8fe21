import type { FastifyRequest } from 'fastify';
import { safeEqual } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { AccessTokens, VerifiedAccessToken } from '../oauth/access-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `requireAccessToken`: the login the caller's access token stands for. */
    principal: VerifiedAccessToken;
    /** The client's address, behind the load balancers named in TRUST_PROXY (see request-context.ts). */
    readonly clientAddress: string | undefined;
  }
}

/** The credentials of `Authorization: <scheme> <credentials>`, or undefined for another scheme. */
function credentialsFor(request: FastifyRequest, scheme: string): string | undefined {
  const match = /^([A-Za-z]+) +([A-Za-z0-9._~+/=-]+)$/.exec(request.headers.authorization ?? '');
  return match && match[1]?.toLowerCase() === scheme.toLowerCase() ? match[2] : undefined;
}

/** preHandler for /mfa/: a valid access token (RFC 6750 §2.1), or 401 `invalid_token`. */
export function createRequireAccessToken(accessTokens: AccessTokens) {
  return async function requireAccessToken(request: FastifyRequest): Promise<void> {
    request.principal = await accessTokens.verifyAccessToken(bearerTokenOf(request));
  };
}

/** The access token of `Authorization: Bearer <token>`; throws 401 `invalid_token` when there is none. */
export function bearerTokenOf(request: FastifyRequest): string {
  const token = credentialsFor(request, 'Bearer');
  if (!token) throw new ServiceError('invalid_token', 'send an access token as Authorization: Bearer <token>');
  return token;
}

/** onRequest guard for /admin/: `Bearer $ADMIN_TOKEN`, compared in constant time; no token configured means 401. */
export function createRequireAdmin(adminToken: string | undefined) {
  if (adminToken === undefined) {
    return async function adminApiOff(): Promise<void> {
      throw new ServiceError(
        'invalid_token',
        'the admin API is off: this server has no ADMIN_TOKEN configured; start it with ADMIN_TOKEN set (16 or more characters), or use the admin command line',
      );
    };
  }
  return createRequireSharedSecret(adminToken, 'the admin API needs Authorization: Bearer <ADMIN_TOKEN>');
}

/** onRequest guard for /metrics: `Bearer $METRICS_TOKEN` when one is configured, open otherwise. */
export function createRequireMetricsToken(metricsToken: string | undefined) {
  if (metricsToken === undefined) return async () => {};
  return createRequireSharedSecret(metricsToken, 'metrics need Authorization: Bearer <METRICS_TOKEN>');
}

function createRequireSharedSecret(secret: string, description: string) {
  return async function requireSharedSecret(request: FastifyRequest): Promise<void> {
    const token = credentialsFor(request, 'Bearer');
    if (token === undefined || !safeEqual(token, secret)) {
      throw new ServiceError('invalid_token', description);
    }
  };
}

/**
 * The client credentials of a token request: `client_secret_basic` (RFC 6749 §2.3.1, form-encoded
 * id and secret) or `client_secret_post`; undefined when none were sent (a public client).
 */
export function readClientCredentials(
  request: FastifyRequest,
  body: { client_id?: string; client_secret?: string },
): { clientId: string; clientSecret?: string } | undefined {
  if (request.headers.authorization === undefined) {
    if (body.client_id === undefined && body.client_secret !== undefined) {
      throw new ServiceError('invalid_request', 'client_secret was sent without client_id');
    }
    return body.client_id === undefined ? undefined : { clientId: body.client_id, clientSecret: body.client_secret };
  }
  const basic = credentialsFor(request, 'Basic');
  if (basic === undefined) throw new ServiceError('invalid_client', 'client authentication must use HTTP Basic');
  if (body.client_id !== undefined || body.client_secret !== undefined) {
    throw new ServiceError('invalid_request', 'use one client authentication method, not two');
  }
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) throw new ServiceError('invalid_client', 'malformed HTTP Basic credentials');
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw new ServiceError('invalid_client', 'malformed HTTP Basic credentials');
  }
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}
