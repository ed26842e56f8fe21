import { isIP } from 'node:net';
import { ServiceError } from '../errors.js';
import type { ClientMetadata, MfaChallengeStyle, MfaPolicy, TokenEndpointAuthMethod } from '../store/clients.js';
import { ID_TOKEN_ALGS } from './signing-keys.js';

export const TOKEN_ENDPOINT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'none',
];
export const MFA_POLICIES: readonly MfaPolicy[] = ['optional', 'required'];
/** What a client may be granted unless it registers otherwise (CONTRACT §18). */
export const DEFAULT_ALLOWED_SCOPES = ['openid', 'profile', 'offline_access'];
/** The longest a browser may skip the second step (CONTRACT §19): a year, as the cookie may live no longer in Chromium (400 days). */
export const MAX_REMEMBER_DEVICE_DAYS = 365;

/** Metadata as the admin API and the CLI take it (wire names), every field optional. */
export interface ClientMetadataInput {
  redirect_uris?: unknown;
  post_logout_redirect_uris?: unknown;
  token_endpoint_auth_method?: unknown;
  allowed_scopes?: unknown;
  web_origins?: unknown;
  id_token_signed_response_alg?: unknown;
  mfa_policy?: unknown;
  remember_device_days?: unknown;
}

/** A new client's metadata: what was given, checked, and the defaults for the rest. */
export const DEFAULT_METADATA: ClientMetadata = {
  redirectUris: [],
  postLogoutRedirectUris: [],
  tokenEndpointAuthMethod: 'client_secret_basic',
  allowedScopes: DEFAULT_ALLOWED_SCOPES,
  webOrigins: [],
  idTokenSignedResponseAlg: 'RS256',
  mfaPolicy: 'optional',
  rememberDeviceDays: 0,
};

// RFC 6749 §3.3 scope-token.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const MAX_URIS = 20;
const MAX_URI_LENGTH = 2000;
/** Schemes that run or read something where they land, never a place to send a code to. */
const DANGEROUS_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:']);

/**
 * The given fields of `input`, checked (CONTRACT §18); throws 400 `invalid_client_metadata`
 * naming the field and what to send instead.
 */
export function parseClientMetadata(input: ClientMetadataInput): Partial<ClientMetadata> {
  const parsed: Partial<ClientMetadata> = {};
  if (input.redirect_uris !== undefined) parsed.redirectUris = uriList('redirect_uris', input.redirect_uris);
  if (input.post_logout_redirect_uris !== undefined) {
    parsed.postLogoutRedirectUris = uriList('post_logout_redirect_uris', input.post_logout_redirect_uris);
  }
  if (input.token_endpoint_auth_method !== undefined) {
    parsed.tokenEndpointAuthMethod = oneOf(
      'token_endpoint_auth_method',
      input.token_endpoint_auth_method,
      TOKEN_ENDPOINT_AUTH_METHODS,
    );
  }
  if (input.allowed_scopes !== undefined) parsed.allowedScopes = scopeList(input.allowed_scopes);
  if (input.web_origins !== undefined) parsed.webOrigins = originList(input.web_origins);
  if (input.id_token_signed_response_alg !== undefined) {
    parsed.idTokenSignedResponseAlg = oneOf(
      'id_token_signed_response_alg',
      input.id_token_signed_response_alg,
      ID_TOKEN_ALGS,
    );
  }
  if (input.mfa_policy !== undefined) parsed.mfaPolicy = oneOf('mfa_policy', input.mfa_policy, MFA_POLICIES);
  if (input.remember_device_days !== undefined) {
    const days = input.remember_device_days;
    if (typeof days !== 'number' || !Number.isInteger(days) || days < 0 || days > MAX_REMEMBER_DEVICE_DAYS) {
      throw invalid(
        'remember_device_days',
        `expected a whole number of days from 0 (never) to ${MAX_REMEMBER_DEVICE_DAYS}, got ${JSON.stringify(days)}`,
      );
    }
    parsed.rememberDeviceDays = days;
  }
  return parsed;
}

/** `mfa_challenge`: how the password grant tells the client a second factor is needed. */
export function parseMfaChallenge(value: unknown): MfaChallengeStyle {
  return oneOf('mfa_challenge', value, ['seed', 'error'] as const);
}

function invalid(field: string, why: string): ServiceError {
  return new ServiceError('invalid_client_metadata', `${field}: ${why}`);
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw invalid(field, `expected one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return found;
}

function stringList(field: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw invalid(field, 'expected an array of strings');
  }
  if (value.length > MAX_URIS) throw invalid(field, `at most ${MAX_URIS} entries`);
  return [...new Set(value)];
}

function uriList(field: string, value: unknown): string[] {
  return stringList(field, value).map((uri, index) => {
    const why = whyRedirectUriRefused(uri);
    if (why) throw invalid(`${field}[${index}]`, why);
    return uri;
  });
}

/**
 * Why `uri` may not receive an authorization response (RFC 6749 §3.1.2, RFC 8252 §7, RFC 9700
 * §4.1), or undefined. https anywhere; http only to a loopback host (native apps, development);
 * a private-use scheme only as a reverse domain name (`com.example.app:/callback`).
 */
export function whyRedirectUriRefused(uri: string): string | undefined {
  if (uri.length > MAX_URI_LENGTH) return `at most ${MAX_URI_LENGTH} characters`;
  if (!URL.canParse(uri)) return 'expected an absolute URI, e.g. https://app.example.com/callback';
  const url = new URL(uri);
  if (uri.includes('#')) return 'a redirect URI may not have a fragment (RFC 6749 §3.1.2)';
  if (uri.includes('*')) return 'no wildcards: register each URI exactly';
  if (DANGEROUS_SCHEMES.has(url.protocol)) return `the ${url.protocol} scheme is refused`;
  if (url.username || url.password) return 'a redirect URI may not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') {
    return isLoopbackHost(url.hostname)
      ? undefined
      : 'http is allowed only to a loopback host (127.0.0.1, [::1], localhost); use https';
  }
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name the app controls.
  const scheme = url.protocol.slice(0, -1);
  if (!/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme)) {
    return `a private-use scheme must be a reverse domain name, e.g. com.example.app:/callback (got ${scheme}:)`;
  }
  return undefined;
}

/** A host name a loopback redirect may use (RFC 8252 §7.3, and `localhost` as browsers treat it). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

function scopeList(value: unknown): string[] {
  if (typeof value !== 'string' || value.length > 1000) {
    throw invalid(
      'allowed_scopes',
      'expected a string of space-separated scopes, e.g. "openid profile offline_access"',
    );
  }
  const scopes = value.split(' ').filter(Boolean);
  for (const scope of scopes) {
    if (!SCOPE_TOKEN.test(scope)) throw invalid('allowed_scopes', `"${scope}" is not a scope token (RFC 6749 §3.3)`);
  }
  return [...new Set(scopes)];
}

function originList(value: unknown): string[] {
  return stringList('web_origins', value).map((origin, index) => {
    const url = URL.canParse(origin) ? new URL(origin) : undefined;
    if (!url || url.origin !== origin) {
      throw invalid(
        `web_origins[${index}]`,
        `expected an origin, scheme://host[:port] without a path, got "${origin}"`,
      );
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
      throw invalid(`web_origins[${index}]`, 'expected an https origin (http only for a loopback host)');
    }
    return origin;
  });
}
