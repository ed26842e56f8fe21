import { isIP } from 'node:net';
// The max build, as in mfa/phone-numbers.ts, so that the bundle holds one copy of the metadata.
import { isSupportedCountry } from 'libphonenumber-js/max';
import { BLOCKABLE_LINE_TYPES, type BlockableLineType, DEFAULT_BLOCKED_LINE_TYPES } from './mfa/phone-numbers.js';

export type TwilioConfig = {
  kind: 'twilio';
  accountSid: string;
  authToken: string;
  /** Exactly one of `from` and `messagingServiceSid` is set. */
  from?: string;
  messagingServiceSid?: string;
  apiUrl: string;
  timeoutMs: number;
};

/** Vonage's SMS API (POST {apiUrl}/sms/json). */
export type VonageConfig = {
  kind: 'vonage';
  apiKey: string;
  apiSecret: string;
  /** A number or an alphanumeric sender id. */
  from: string;
  apiUrl: string;
  timeoutMs: number;
};

/** WEBAUTHN_USER_VERIFICATION: whether a passkey used as a second factor must verify its user (PIN, biometrics). */
export type UserVerification = 'preferred' | 'required';

export interface WebauthnConfig {
  rpId: string;
  rpName: string;
  origins: readonly string[];
  userVerification: UserVerification;
  /** WEBAUTHN_ALLOWED_AAGUIDS: the authenticator models a passkey may be made on; undefined: any. */
  allowedAaguids?: readonly string[];
}

export type SmsProviderConfig = { kind: 'console' } | TwilioConfig;
/** CONTRACT §20: where mail goes. SMTP_URL unset: the console, refused in production. */
export type MailConfig =
  | { kind: 'console'; from: string }
  | { kind: 'smtp'; url: string; from: string; timeoutMs: number };
/** CONTRACT §15: the provider that takes over when the primary fails or is silent. */
export type SmsFallbackConfig = TwilioConfig | VonageConfig;

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
  /** Undefined: no failover. */
  smsFallback?: SmsFallbackConfig;
  smsLimits: SmsLimits;
  mail: MailConfig;
  /** Undefined: a key kept in the database is used, with a warning at start (refused in production). */
  secretKey?: string;
  /** Security events older than this are deleted. */
  auditRetentionDays: number;
  /** CONTRACT §14: how old a login may be for a sensitive call, or to start turning MFA on (STEP_UP_MAX_AGE). */
  stepUpMaxAgeSeconds: number;
  /** CONTRACT §20: how long a recovery request waits before the factors may be removed (RECOVERY_DELAY). */
  recoveryDelaySeconds: number;
  /** CONTRACT §18: the browser's sign-in session lasts at most this long (SSO_SESSION_TTL) … */
  ssoSessionTtlSeconds: number;
  /** … and ends after this long without use (SSO_SESSION_IDLE_TTL). */
  ssoSessionIdleTtlSeconds: number;
  /** CONTRACT §12, §19: the relying party passkeys are made for, and the origins allowed to use them. */
  webauthn: WebauthnConfig;
  isProduction: boolean;
  logLevel: string;
  /**
   * Addresses or CIDR ranges of the load balancers in front: requests from them have their client
   * address taken from X-Forwarded-For. Undefined: the peer's address is the client's.
   */
  trustedProxies?: readonly string[];
  /** WEBHOOK_ALLOW_PRIVATE: webhooks may use http and go to loopback, private and link-local addresses. */
  webhookAllowPrivate: boolean;
  /** EMAIL_FACTOR=on: users may add email codes as a second factor (CONTRACT §20); off by default. */
  emailFactor: boolean;
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
  /** CONTRACT §15: line types (and NON_GEOGRAPHIC) that may not receive an enrolment code. */
  blockedLineTypes: readonly BlockableLineType[];
  /** Enrolment SMS per country (ISO code) per clock hour: `byCountry`'s entry, else `default`. */
  perCountryPerHour: { default: number; byCountry: Readonly<Record<string, number>> };
  /** Enrolment SMS per number range (every digit but the last two) per clock hour. */
  perRangePerHour: number;
  /**
   * The anomaly pause: a country's enrolment SMS pause for the rest of the clock hour when this
   * hour's would pass max(`floor`, `multiple` × the country's hourly average over the 7 days before).
   */
  anomaly: { multiple: number; floor: number };
}

/** Thrown for a bad setting; its message is the one line printed at start-up. */
export class ConfigError extends Error {}

/** RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens. */
const HOST_NAME = /^(?=.{1,253}$)[a-z\d]([a-z\d-]{0,61}[a-z\d])?(\.[a-z\d]([a-z\d-]{0,61}[a-z\d])?)*$/i;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const PROVIDER_TIMEOUT_MS = 10_000;

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
  if (!isIP(host) && !HOST_NAME.test(host)) {
    throw new ConfigError(`HOST must be an IP address or a host name of this machine (e.g. 0.0.0.0), got "${host}"`);
  }

  const databaseUrl = value('DATABASE_URL') ?? 'sqlite:./data/mfa.sqlite';
  // URL refuses a port that is not a number. Not quoted back: a postgres URL holds the password.
  const isPostgres = /^postgres(ql)?:\/\/.+/.test(databaseUrl) && URL.canParse(databaseUrl);
  if (!/^sqlite:.+/.test(databaseUrl) && !isPostgres) {
    throw new ConfigError(
      'DATABASE_URL must be sqlite:<path> or postgres://user:pass@host:port/db (the port a number)',
    );
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
    smsFallback: loadSmsFallback(value),
    smsLimits: loadSmsLimits(value, integer),
    mail: loadMail(value, issuer, integer('SMTP_TIMEOUT_MS', PROVIDER_TIMEOUT_MS, 100, 120_000)),
    secretKey,
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', 90, 1, 36_500),
    stepUpMaxAgeSeconds: integer('STEP_UP_MAX_AGE', 600, 30, 86_400),
    // At least a minute, at most 30 days: the delay is what lets the owner see and stop a request.
    recoveryDelaySeconds: integer('RECOVERY_DELAY', 259_200, 60, 2_592_000),
    ssoSessionTtlSeconds: integer('SSO_SESSION_TTL', 36_000, 60, 31_536_000),
    ssoSessionIdleTtlSeconds: integer('SSO_SESSION_IDLE_TTL', 1800, 60, 31_536_000),
    webauthn: loadWebauthn(value, issuer, serviceName),
    isProduction,
    logLevel,
    trustedProxies: loadTrustedProxies(value('TRUST_PROXY')),
    webhookAllowPrivate: boolean(value, 'WEBHOOK_ALLOW_PRIVATE', false),
    emailFactor: onOff(value, 'EMAIL_FACTOR', false),
  };
  if (secretKey === undefined && isProduction) {
    throw new ConfigError(
      'SECRET_KEY is required when NODE_ENV=production: it encrypts the signing keys at rest (32+ characters)',
    );
  }
  // After SECRET_KEY, so that an operator moving to production hears of the older requirement first.
  if (config.mail.kind === 'console' && isProduction) {
    throw new ConfigError(
      'SMTP_URL is required when NODE_ENV=production (e.g. smtp://user:pass@smtp.example.com:587): email codes must reach people, not the console',
    );
  }
  return deepFreeze(config);
}

function loadMail(value: Reader, issuer: string, timeoutMs: number): MailConfig {
  const from = value('MAIL_FROM') ?? `no-reply@${new URL(issuer).hostname}`;
  // A display name is allowed: "MFA <no-reply@example.com>".
  if (!/^([^<>\r\n]*<)?[^\s@<>]+@[^\s@<>]+>?$/.test(from)) {
    throw new ConfigError(
      `MAIL_FROM must be an address, optionally with a name ("MFA <no-reply@example.com>"), got "${from}"`,
    );
  }
  const url = value('SMTP_URL');
  if (url === undefined) return { kind: 'console', from };
  // Not quoted back: the URL holds the SMTP password.
  if (!URL.canParse(url) || !['smtp:', 'smtps:'].includes(new URL(url).protocol) || !new URL(url).hostname) {
    throw new ConfigError('SMTP_URL must be smtp://user:pass@host:587 (STARTTLS) or smtps://user:pass@host:465');
  }
  return { kind: 'smtp', url, from, timeoutMs };
}

type Reader = (name: string) => string | undefined;

function loadSmsProvider(value: Reader, isProduction: boolean): SmsProviderConfig {
  const kind = value('SMS_PROVIDER') ?? 'console';
  if (kind === 'console') {
    if (isProduction) throw new ConfigError('SMS_PROVIDER=console is refused when NODE_ENV=production; use twilio');
    return { kind };
  }
  if (kind !== 'twilio') throw new ConfigError(`SMS_PROVIDER must be twilio or console, got "${kind}"`);
  return loadTwilio(value, 'TWILIO_', 'SMS_PROVIDER=twilio');
}

function loadSmsFallback(value: Reader): SmsFallbackConfig | undefined {
  const kind = value('SMS_FALLBACK_PROVIDER');
  if (kind === undefined) return undefined;
  if (value('SMS_PROVIDER') !== 'twilio') {
    throw new ConfigError('SMS_FALLBACK_PROVIDER needs SMS_PROVIDER=twilio (the console sink never fails over)');
  }
  if (kind === 'twilio') return loadTwilio(value, 'TWILIO_FALLBACK_', 'SMS_FALLBACK_PROVIDER=twilio');
  if (kind !== 'vonage') throw new ConfigError(`SMS_FALLBACK_PROVIDER must be twilio or vonage, got "${kind}"`);
  const required = requiredWhen(value, 'SMS_FALLBACK_PROVIDER=vonage');
  return {
    kind,
    apiKey: required('VONAGE_API_KEY'),
    apiSecret: required('VONAGE_API_SECRET'),
    from: required('VONAGE_FROM'),
    apiUrl: httpUrl(value, 'VONAGE_API_URL', 'https://rest.nexmo.com'),
    timeoutMs: PROVIDER_TIMEOUT_MS,
  };
}

/** A Twilio account from the variables named `<prefix>ACCOUNT_SID` and so on. */
function loadTwilio(value: Reader, prefix: string, because: string): TwilioConfig {
  const required = requiredWhen(value, because);
  const accountSid = required(`${prefix}ACCOUNT_SID`);
  const authToken = required(`${prefix}AUTH_TOKEN`);
  const from = value(`${prefix}FROM`);
  const messagingServiceSid = value(`${prefix}MESSAGING_SERVICE_SID`);
  if ((from === undefined) === (messagingServiceSid === undefined)) {
    throw new ConfigError(`${prefix}FROM or ${prefix}MESSAGING_SERVICE_SID must be set, exactly one of them`);
  }
  const apiUrl = httpUrl(value, `${prefix}API_URL`, 'https://api.twilio.com');
  return { kind: 'twilio', accountSid, authToken, from, messagingServiceSid, apiUrl, timeoutMs: PROVIDER_TIMEOUT_MS };
}

function requiredWhen(value: Reader, because: string) {
  return (name: string) => {
    const found = value(name);
    if (found === undefined) throw new ConfigError(`${name} is required when ${because}`);
    return found;
  };
}

/** An http(s) base URL, without its trailing slashes. */
function httpUrl(value: Reader, name: string, fallback: string): string {
  const url = (value(name) ?? fallback).replace(/\/+$/, '');
  if (!URL.canParse(url) || !/^https?:/.test(url))
    throw new ConfigError(`${name} must be an http(s) URL, got "${url}"`);
  return url;
}

function loadWebauthn(value: Reader, issuer: string, serviceName: string): WebauthnConfig {
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
  const userVerification = value('WEBAUTHN_USER_VERIFICATION') ?? 'preferred';
  if (userVerification !== 'preferred' && userVerification !== 'required') {
    throw new ConfigError(`WEBAUTHN_USER_VERIFICATION must be preferred or required, got "${userVerification}"`);
  }
  const allowedAaguids = value('WEBAUTHN_ALLOWED_AAGUIDS')
    ?.split(',')
    .map((aaguid) => aaguid.trim().toLowerCase());
  for (const aaguid of allowedAaguids ?? []) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(aaguid)) {
      throw new ConfigError(`WEBAUTHN_ALLOWED_AAGUIDS must be comma-separated AAGUIDs (UUIDs), got "${aaguid}"`);
    }
  }
  return {
    rpId,
    rpName: value('WEBAUTHN_RP_NAME') ?? serviceName,
    origins,
    userVerification,
    ...(allowedAaguids && { allowedAaguids }),
  };
}

function loadSmsLimits(
  value: Reader,
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
    blockedLineTypes: loadBlockedLineTypes(value('SMS_BLOCKED_LINE_TYPES')),
    perCountryPerHour: loadCountryLimits(value('SMS_COUNTRY_HOURLY_LIMIT')),
    perRangePerHour: integer('SMS_RANGE_HOURLY_LIMIT', 5, 1, 1_000_000),
    anomaly: {
      multiple: integer('SMS_ANOMALY_MULTIPLE', 10, 1, 1000),
      floor: integer('SMS_ANOMALY_FLOOR', 20, 1, 10_000_000),
    },
  };
}

/** `SMS_BLOCKED_LINE_TYPES`: comma-separated types, or `none`. */
function loadBlockedLineTypes(raw: string | undefined): BlockableLineType[] {
  if (raw === undefined) return [...DEFAULT_BLOCKED_LINE_TYPES];
  if (raw.trim().toLowerCase() === 'none') return [];
  const types = raw.split(',').map((type) => type.trim().toUpperCase());
  for (const type of types) {
    if (!(BLOCKABLE_LINE_TYPES as readonly string[]).includes(type)) {
      throw new ConfigError(
        `SMS_BLOCKED_LINE_TYPES must be none or comma-separated types of ${BLOCKABLE_LINE_TYPES.join(', ')}, got "${type}"`,
      );
    }
  }
  return [...new Set(types as BlockableLineType[])];
}

/** `SMS_COUNTRY_HOURLY_LIMIT`: a bare number for every country, `CC=N` for one, e.g. `100,US=500,GB=200`. */
function loadCountryLimits(raw: string | undefined): SmsLimits['perCountryPerHour'] {
  const limits = { default: 100, byCountry: {} as Record<string, number> };
  if (raw === undefined) return limits;
  let sawDefault = false;
  for (const entry of raw.split(',').map((part) => part.trim())) {
    const match = /^(?:([A-Za-z]{2})=)?(\d{1,8})$/.exec(entry);
    const limit = Number(match?.[2] ?? 0);
    const country = match?.[1]?.toUpperCase();
    if (!match || limit < 1) {
      throw new ConfigError(
        `SMS_COUNTRY_HOURLY_LIMIT must be a number for every country and CC=N entries, comma-separated (e.g. 100,US=500,GB=200), got "${entry}"`,
      );
    }
    if (country === undefined) {
      if (sawDefault) throw new ConfigError('SMS_COUNTRY_HOURLY_LIMIT may hold one bare number (the default), not two');
      sawDefault = true;
      limits.default = limit;
    } else if (!isSupportedCountry(country)) {
      throw new ConfigError(`SMS_COUNTRY_HOURLY_LIMIT names "${country}", which is not an ISO 3166 country code`);
    } else if (country in limits.byCountry) {
      throw new ConfigError(`SMS_COUNTRY_HOURLY_LIMIT names ${country} twice`);
    } else {
      limits.byCountry[country] = limit;
    }
  }
  return limits;
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

/** CONTRACT §20 spells the switch `EMAIL_FACTOR=on`. */
function onOff(value: (name: string) => string | undefined, name: string, fallback: boolean): boolean {
  const raw = value(name);
  if (raw === undefined) return fallback;
  if (raw !== 'on' && raw !== 'off') throw new ConfigError(`${name} must be on or off, got "${raw}"`);
  return raw === 'on';
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
