import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { safeEqual } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { meetsAcr, SENSITIVE_ACR, StepUpRequired } from '../logins/step-up.js';
import type { AccessTokens, VerifiedAccessToken } from '../oauth/access-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `requireAccessToken`: the login the caller's access token stands for. */
    principal: VerifiedAccessToken;
    /** Set by `requireAdmin` for an operator's access token (none for ADMIN_TOKEN). */
    operator?: { userId: string };
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

/**
 * onRequest guard for /admin/ (CONTRACT §21): `Bearer $ADMIN_TOKEN` (scripts, the CLI), compared in
 * constant time, or the access token of an operator whose login reached a second factor (aal2 or
 * better), within STEP_UP_MAX_AGE for a change. An operator's request carries `request.operator`.
 */
export function createRequireAdmin(deps: {
  adminToken: string | undefined;
  accessTokens: AccessTokens;
  isOperator: (userId: string) => Promise<boolean>;
  stepUpMaxAgeSeconds: number;
  clock: Clock;
}) {
  const { adminToken, accessTokens, isOperator, stepUpMaxAgeSeconds, clock } = deps;
  // ASCII only: the description goes into the WWW-Authenticate header too.
  const noCredentials = adminToken
    ? "the admin API needs Authorization: Bearer <ADMIN_TOKEN>, or an operator's access token"
    : "the admin API takes only operators' access tokens here: this server has no ADMIN_TOKEN configured for scripts; start it with ADMIN_TOKEN set (16 or more characters), or use the admin command line";
  return async function requireAdmin(request: FastifyRequest): Promise<void> {
    const token = credentialsFor(request, 'Bearer');
    if (token === undefined) throw new ServiceError('invalid_token', noCredentials);
    if (adminToken !== undefined && safeEqual(token, adminToken)) return;
    // Not the ADMIN_TOKEN: an access token, or nothing this service issued.
    const login = await accessTokens.verifyAccessToken(token).catch(() => {
      throw new ServiceError('invalid_token', noCredentials);
    });
    if (!(await isOperator(login.userId))) {
      throw new ServiceError(
        'not_an_operator',
        'this account is not an operator; an operator grants the role with npm run admin -- grant-operator USER',
      );
    }
    if (!meetsAcr(login.acr, SENSITIVE_ACR)) {
      throw new StepUpRequired(
        'the admin API needs a sign-in with a passkey or an authenticator app; sign in again with acr_values=aal2',
        SENSITIVE_ACR,
        stepUpMaxAgeSeconds,
      );
    }
    const ageSeconds = Math.floor(clock.now().getTime() / 1000) - login.authTime;
    if (request.method !== 'GET' && request.method !== 'HEAD' && ageSeconds > stepUpMaxAgeSeconds) {
      throw new StepUpRequired(
        `a change needs a sign-in at most ${stepUpMaxAgeSeconds} s old (this one is ${ageSeconds} s); sign in again with max_age=${stepUpMaxAgeSeconds}`,
        SENSITIVE_ACR,
        stepUpMaxAgeSeconds,
      );
    }
    request.operator = { userId: login.userId };
  };
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
