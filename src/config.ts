import { isIP } from 'node:net';
import { isSupportedCountry } from 'libphonenumber-js';

export type SmsProviderConfig =
  | { kind: 'console' }
  | {
      kind: 'twilio';
      accountSid: string;
      authToken: string;
      /** Exactly one of `from` and `messagingServiceSid` is set. */
      from?: string;
      messagingServiceSid?: string;
      apiUrl: string;
      timeoutMs: number;
    };

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  databasePool: { max: number; connectionTimeoutMs: number };
  /** Undefined: every admin call answers 401. */
  adminToken?: string;
  /** Undefined: GET /metrics is open (bind it to a private network). */
  metricsToken?: string;
  issuer: string;
  /** Named in the SMS text: "Your <serviceName> verification code is …". */
  serviceName: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  sms: SmsProviderConfig;
  smsLimits: SmsLimits;
  /** Undefined: a key kept in the database is used, with a warning at start (refused in production). */
  secretKey?: string;
  /** Security events older than this are deleted. */
  auditRetentionDays: number;
  /** CONTRACT §12: the relying party passkeys are made for, and the origins allowed to use them. */
  webauthn: { rpId: string; rpName: string; origins: readonly string[] };
  isProduction: boolean;
  logLevel: string;
  /**
   * Addresses or CIDR ranges of the load balancers in front: requests from them have their client
   * address taken from X-Forwarded-For. Undefined: the peer's address is the client's.
   */
  trustedProxies?: readonly string[];
  /** WEBHOOK_ALLOW_PRIVATE: webhooks may use http and go to loopback, private and link-local addresses. */
  webhookAllowPrivate: boolean;
}

export interface SmsLimits {
  codeTtlSeconds: number;
  maxAttempts: number;
  cooldownSeconds: number;
  perUserPerHour: number;
  /** Enrolment SMS per destination number, across all users. */
  perNumberPerHour: number;
  /** Enrolment SMS across all users: below `globalPerHour`, so enrolments cannot use up login SMS. */
  enrolmentPerHour: number;
  /** Across all users and purposes: a ceiling on the cost of an SMS-pumping attack that gets past the others. */
  globalPerHour: number;
  /** ISO 3166 alpha-2 codes; undefined means every country. */
  allowedCountries?: readonly string[];
}

/** Thrown for a bad setting; its message is the one line printed at start-up. */
export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const TWILIO_TIMEOUT_MS = 10_000;

/** Parses the environment into a frozen Config; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const value = (name: string) => {
    const raw = env[name];
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const integer = (name: string, fallback: number, min: number, max: number) => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  };

  const isProduction = value('NODE_ENV') === 'production';
  const port = integer('PORT', 8000, 0, 65535);
  const host = value('HOST') ?? '127.0.0.1';

  const databaseUrl = value('DATABASE_URL') ?? 'sqlite:./data/mfa.sqlite';
  if (!/^sqlite:.+/.test(databaseUrl) && !/^postgres(ql)?:\/\/.+/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be sqlite:<path> or postgres://user:pass@host:port/db');
  }

  const issuer = value('ISSUER') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  try {
    const url = new URL(issuer);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error();
    if (url.search || url.hash) throw new Error();
  } catch {
    throw new ConfigError(`ISSUER must be an http(s) URL without query or fragment, got "${issuer}"`);
  }

  const logLevel = value('LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const adminToken = bearerSecret(value, 'ADMIN_TOKEN');
  const metricsToken = bearerSecret(value, 'METRICS_TOKEN');
  const secretKey = value('SECRET_KEY');
  if (secretKey !== undefined && secretKey.length < 32) {
    throw new ConfigError('SECRET_KEY must be at least 32 characters');
  }

  const serviceName = value('SERVICE_NAME') ?? 'MFA';
  if (!/^[\p{L}\p{N} .&'-]{1,40}$/u.test(serviceName)) {
    throw new ConfigError("SERVICE_NAME must be 1 to 40 letters, digits, spaces or .&'-");
  }

  const config: Config = {
    port,
    host,
    databaseUrl,
    databasePool: {
      max: integer('DATABASE_POOL_MAX', 10, 1, 1000),
      connectionTimeoutMs: integer('DATABASE_CONNECT_TIMEOUT_MS', 5000, 100, 60_000),
    },
    adminToken,
    metricsToken,
    issuer: issuer.replace(/\/+$/, ''),
    serviceName,
    accessTokenTtlSeconds: integer('ACCESS_TOKEN_TTL', 900, 60, 86_400),
    refreshTokenTtlSeconds: integer('REFRESH_TOKEN_TTL', 2_592_000, 60, 31_536_000),
    sms: loadSmsProvider(value, isProduction),
    smsLimits: loadSmsLimits(value, integer),
    secretKey,
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', 90, 1, 36_500),
    webauthn: loadWebauthn(value, issuer, serviceName),
    isProduction,
    logLevel,
    trustedProxies: loadTrustedProxies(value('TRUST_PROXY')),
    webhookAllowPrivate: boolean(value, 'WEBHOOK_ALLOW_PRIVATE', false),
  };
  if (secretKey === undefined && isProduction) {
    throw new ConfigError(
      'SECRET_KEY is required when NODE_ENV=production: it encrypts the signing keys at rest (32+ characters)',
    );
  }
  return deepFreeze(config);
}

function loadSmsProvider(value: (name: string) => string | undefined, isProduction: boolean): SmsProviderConfig {
  const kind = value('SMS_PROVIDER') ?? 'console';
  if (kind === 'console') {
    if (isProduction) throw new ConfigError('SMS_PROVIDER=console is refused when NODE_ENV=production; use twilio');
    return { kind };
  }
  if (kind !== 'twilio') throw new ConfigError(`SMS_PROVIDER must be twilio or console, got "${kind}"`);

  const required = (name: string) => {
    const found = value(name);
    if (found === undefined) throw new ConfigError(`${name} is required when SMS_PROVIDER=twilio`);
    return found;
  };
  const accountSid = required('TWILIO_ACCOUNT_SID');
  const authToken = required('TWILIO_AUTH_TOKEN');
  const from = value('TWILIO_FROM');
  const messagingServiceSid = value('TWILIO_MESSAGING_SERVICE_SID');
  if ((from === undefined) === (messagingServiceSid === undefined)) {
    throw new ConfigError('TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID must be set, exactly one of them');
  }
  const apiUrl = (value('TWILIO_API_URL') ?? 'https://api.twilio.com').replace(/\/+$/, '');
  if (!URL.canParse(apiUrl) || !/^https?:/.test(apiUrl)) {
    throw new ConfigError(`TWILIO_API_URL must be an http(s) URL, got "${apiUrl}"`);
  }
  return { kind, accountSid, authToken, from, messagingServiceSid, apiUrl, timeoutMs: TWILIO_TIMEOUT_MS };
}

function loadWebauthn(value: (name: string) => string | undefined, issuer: string, serviceName: string) {
  const issuerUrl = new URL(issuer);
  const configuredRpId = value('WEBAUTHN_RP_ID');
  if (configuredRpId !== undefined && !/^[a-z0-9.-]+$/i.test(configuredRpId)) {
    throw new ConfigError(`WEBAUTHN_RP_ID must be a domain name, got "${configuredRpId}"`);
  }
  const rpId = configuredRpId ?? issuerUrl.hostname;
  const origins = (value('WEBAUTHN_ORIGINS') ?? issuerUrl.origin).split(',').map((origin) => origin.trim());
  for (const origin of origins) {
    // A passkey works only on its RP ID or a subdomain of it (WebAuthn §5.1.3 and §13.4.9).
    const host = URL.canParse(origin) ? new URL(origin) : undefined;
    const fits = host && host.origin === origin && (host.hostname === rpId || host.hostname.endsWith(`.${rpId}`));
    if (!fits) {
      throw new ConfigError(
        `WEBAUTHN_ORIGINS must be comma-separated origins (scheme://host[:port]) on WEBAUTHN_RP_ID ${rpId} or its subdomains, got "${origin}"`,
      );
    }
  }
  return { rpId, rpName: value('WEBAUTHN_RP_NAME') ?? serviceName, origins };
}

function loadSmsLimits(
  value: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
): SmsLimits {
  const globalPerHour = integer('SMS_GLOBAL_HOURLY_LIMIT', 1000, 2, 10_000_000);
  const enrolmentPerHour = integer('SMS_ENROLMENT_HOURLY_LIMIT', Math.ceil(globalPerHour / 2), 1, 10_000_000);
  if (enrolmentPerHour >= globalPerHour) {
    throw new ConfigError(
      `SMS_ENROLMENT_HOURLY_LIMIT must be below SMS_GLOBAL_HOURLY_LIMIT (${globalPerHour}), so that enrolments cannot use up the login SMS`,
    );
  }
  return {
    codeTtlSeconds: 300,
    maxAttempts: 5,
    cooldownSeconds: 30,
    perUserPerHour: integer('SMS_USER_HOURLY_LIMIT', 10, 1, 1000),
    perNumberPerHour: integer('SMS_NUMBER_HOURLY_LIMIT', 10, 1, 1000),
    enrolmentPerHour,
    globalPerHour,
    allowedCountries: loadAllowedCountries(value('SMS_ALLOWED_COUNTRIES')),
  };
}

/**
 * A bearer secret must be one that can be sent: RFC 6750's b64token characters, and at least 16
 * of them. A token with other characters could never match, and would lock everyone out silently.
 */
function bearerSecret(value: (name: string) => string | undefined, name: string): string | undefined {
  const secret = value(name);
  if (secret === undefined) return undefined;
  if (secret.length < 16) throw new ConfigError(`${name} must be at least 16 characters`);
  if (!/^[A-Za-z0-9._~+/=-]+$/.test(secret)) {
    throw new ConfigError(`${name} may hold only letters, digits and . _ ~ + / = - (it is sent as a bearer token)`);
  }
  return secret;
}

function boolean(value: (name: string) => string | undefined, name: string, fallback: boolean): boolean {
  const raw = value(name);
  if (raw === undefined) return fallback;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

function loadTrustedProxies(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const version = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 6 ? 128 : 32));
    if (version === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY must be comma-separated IP addresses or CIDR ranges, got "${entry}"`);
    }
  }
  return entries;
}

function loadAllowedCountries(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const codes = raw.split(',').map((code) => code.trim().toUpperCase());
  for (const code of codes) {
    if (!isSupportedCountry(code)) {
      throw new ConfigError(`SMS_ALLOWED_COUNTRIES must be comma-separated ISO 3166 country codes, got "${code}"`);
    }
  }
  return codes;
}

function deepFreeze<T>(value: T): T {
  for (const inner of Object.values(value as object)) {
    if (inner && typeof inner === 'object') deepFreeze(inner);
  }
  return Object.freeze(value);
}
