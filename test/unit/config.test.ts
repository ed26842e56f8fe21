import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

/** A complete Twilio setup that loadConfig accepts; tests remove or change one variable at a time. */
const TWILIO = {
  SMS_PROVIDER: 'twilio',
  TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000001',
  TWILIO_AUTH_TOKEN: 'twilio-auth-token',
  TWILIO_FROM: '+15005550006',
} as const;

/** assert.throws matcher: a ConfigError whose one-line message names `variable`. */
function namesVariable(variable: string) {
  return (error: unknown) => {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.ok(error.message.includes(variable), `"${error.message}" does not name ${variable}`);
    assert.doesNotMatch(error.message, /\n/, 'the message is one line');
    return true;
  };
}

describe('loadConfig defaults', () => {
  test('with an empty environment: port 8000 on 127.0.0.1, SQLite in ./data, console SMS, the contract TTLs', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.databaseUrl, 'sqlite:./data/mfa.sqlite');
    assert.equal(config.issuer, 'http://127.0.0.1:8000');
    assert.equal(config.accessTokenTtlSeconds, 900);
    assert.equal(config.refreshTokenTtlSeconds, 2_592_000);
    assert.deepEqual(config.sms, { kind: 'console' });
    assert.equal(config.adminToken, undefined, 'no admin token: the admin API answers 401 to everyone');
    assert.equal(config.secretKey, undefined);
    assert.equal(config.isProduction, false);
    assert.equal(config.trustedProxies, undefined, 'X-Forwarded-For is believed from nobody');
    assert.equal(config.logLevel, 'info');
    assert.equal(config.webhookAllowPrivate, false, 'webhooks: https to public addresses only');
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true);
    assert.equal(config.emailFactor, false, 'CONTRACT §20: email codes are opt-in');
    assert.equal(loadConfig({ EMAIL_FACTOR: 'on' }).emailFactor, true);
    assert.equal(config.stepUpMaxAgeSeconds, 600, 'CONTRACT §14: 10 minutes');
    assert.equal(loadConfig({ STEP_UP_MAX_AGE: '120' }).stepUpMaxAgeSeconds, 120);
    assert.equal(config.recoveryDelaySeconds, 259_200, 'CONTRACT §20: a recovery waits 72 hours');
    assert.equal(loadConfig({ RECOVERY_DELAY: '86400' }).recoveryDelaySeconds, 86_400);
  });

  test('SMS limits default to the contract: 5 min, 5 attempts, 30 s cooldown, 10 per user an hour, all countries', () => {
    const limits = loadConfig({}).smsLimits;
    assert.equal(limits.codeTtlSeconds, 300);
    assert.equal(limits.maxAttempts, 5);
    assert.equal(limits.cooldownSeconds, 30);
    assert.equal(limits.perUserPerHour, 10);
    assert.equal(limits.allowedCountries, undefined);
  });

  test('an empty variable counts as unset', () => {
    const config = loadConfig({ PORT: '', HOST: '', DATABASE_URL: '', SMS_PROVIDER: '', ADMIN_TOKEN: '' });
    assert.equal(config.port, 8000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.databaseUrl, 'sqlite:./data/mfa.sqlite');
    assert.equal(config.sms.kind, 'console');
    assert.equal(config.adminToken, undefined);
  });

  test('the default issuer follows HOST and PORT, with IPv6 hosts in brackets', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).issuer, 'http://0.0.0.0:9000');
    assert.equal(loadConfig({ HOST: '::1' }).issuer, 'http://[::1]:8000');
  });

  test('HOST takes an IP address or a host name', () => {
    for (const host of ['0.0.0.0', '::', 'localhost', 'mfa-1.internal.example']) {
      assert.equal(loadConfig({ HOST: host }).host, host);
    }
  });

  test('WebAuthn defaults to the issuer: its host name as RP ID, its origin, SERVICE_NAME as RP name', () => {
    assert.deepEqual(loadConfig({ ISSUER: 'https://auth.example.com', SERVICE_NAME: 'Acme' }).webauthn, {
      rpId: 'auth.example.com',
      rpName: 'Acme',
      origins: ['https://auth.example.com'],
      userVerification: 'preferred',
    });
    assert.equal(loadConfig({ WEBAUTHN_USER_VERIFICATION: 'required' }).webauthn.userVerification, 'required');
    assert.deepEqual(
      loadConfig({
        WEBAUTHN_ALLOWED_AAGUIDS: 'CB69481E-8FF7-4039-93EC-0A2729A154A8, ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4',
      }).webauthn.allowedAaguids,
      ['cb69481e-8ff7-4039-93ec-0a2729a154a8', 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4'],
    );
    assert.deepEqual(
      loadConfig({
        ISSUER: 'https://auth.example.com',
        WEBAUTHN_RP_ID: 'example.com',
        WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com:8443',
      }).webauthn.origins,
      ['https://example.com', 'https://app.example.com:8443'],
    );
  });

  test('ISSUER overrides the default and loses trailing slashes', () => {
    assert.equal(loadConfig({ ISSUER: 'https://auth.example.com/' }).issuer, 'https://auth.example.com');
    assert.equal(loadConfig({ ISSUER: 'https://example.com/auth//' }).issuer, 'https://example.com/auth');
  });

  test('valid settings are read as given', () => {
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: 'postgres://user:pass@db:5432/mfa',
      ADMIN_TOKEN: 'aZ09._~+/=-'.repeat(2),
      SECRET_KEY: 'k'.repeat(32),
      AUDIT_RETENTION_DAYS: '30',
      SMS_ENROLMENT_HOURLY_LIMIT: '400',
      ACCESS_TOKEN_TTL: '60',
      REFRESH_TOKEN_TTL: '31536000',
      LOG_LEVEL: 'warn',
      SMS_USER_HOURLY_LIMIT: '3',
      SMS_NUMBER_HOURLY_LIMIT: '1000',
      SMS_ALLOWED_COUNTRIES: 'us, gb,FR',
    });
    assert.equal(config.port, 0);
    assert.equal(config.databaseUrl, 'postgres://user:pass@db:5432/mfa');
    assert.equal(config.adminToken, 'aZ09._~+/=-'.repeat(2));
    assert.equal(config.auditRetentionDays, 30);
    assert.equal(config.smsLimits.enrolmentPerHour, 400);
    assert.equal(config.smsLimits.globalPerHour, 1000);
    assert.equal(config.secretKey, 'k'.repeat(32));
    assert.equal(config.accessTokenTtlSeconds, 60);
    assert.equal(config.refreshTokenTtlSeconds, 31_536_000);
    assert.equal(config.logLevel, 'warn');
    assert.equal(config.smsLimits.perUserPerHour, 3);
    assert.equal(config.smsLimits.perNumberPerHour, 1000);
    assert.deepEqual(config.smsLimits.allowedCountries, ['US', 'GB', 'FR']);
  });
});

describe('loadConfig refuses invalid values, naming the variable', () => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ PORT: '65536' }, 'PORT'],
    [{ PORT: '80.5' }, 'PORT'],
    [{ PORT: '8000 ' }, 'PORT'],
    [{ PORT: '1e3' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
    [{ DATABASE_URL: './data/mfa.sqlite' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://mfa:pw@localhost:abc/mfa' }, 'DATABASE_URL'],
    [{ HOST: 'no such host' }, 'HOST'],
    [{ HOST: '-leading-hyphen.example' }, 'HOST'],
    [{ HOST: 'http://0.0.0.0' }, 'HOST'],
    [{ ISSUER: 'ftp://auth.example.com' }, 'ISSUER'],
    [{ ISSUER: 'not a url' }, 'ISSUER'],
    [{ ISSUER: 'https://auth.example.com/?tenant=1' }, 'ISSUER'],
    [{ ISSUER: 'https://auth.example.com/#top' }, 'ISSUER'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    // A recovery's delay is what lets the owner see it: not under a minute, not over 30 days.
    [{ RECOVERY_DELAY: '59' }, 'RECOVERY_DELAY'],
    [{ RECOVERY_DELAY: '2592001' }, 'RECOVERY_DELAY'],
    [{ RECOVERY_DELAY: '72h' }, 'RECOVERY_DELAY'],
    [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '1' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '10.0.0.1,,10.0.0.2' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: 'lb.internal' }, 'TRUST_PROXY'],
    [{ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN'],
    // Characters a bearer token cannot carry (RFC 6750 b64token): such a token could never match.
    [{ ADMIN_TOKEN: 'an admin token with spaces' }, 'ADMIN_TOKEN'],
    [{ ADMIN_TOKEN: 'admin-token-with-"quotes"' }, 'ADMIN_TOKEN'],
    [{ ADMIN_TOKEN: 'admin-token-ünïcode-000' }, 'ADMIN_TOKEN'],
    [{ METRICS_TOKEN: 'metrics token with spaces' }, 'METRICS_TOKEN'],
    [{ AUDIT_RETENTION_DAYS: '0' }, 'AUDIT_RETENTION_DAYS'],
    [{ WEBAUTHN_RP_ID: 'https://example.com' }, 'WEBAUTHN_RP_ID'],
    [{ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://example.org' }, 'WEBAUTHN_ORIGINS'],
    [{ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://app.example.com/path' }, 'WEBAUTHN_ORIGINS'],
    [{ ISSUER: 'https://auth.example.com', WEBAUTHN_ORIGINS: 'https://evil.com' }, 'WEBAUTHN_ORIGINS'],
    [{ WEBAUTHN_USER_VERIFICATION: 'discouraged' }, 'WEBAUTHN_USER_VERIFICATION'],
    [{ WEBAUTHN_ALLOWED_AAGUIDS: 'yubikey' }, 'WEBAUTHN_ALLOWED_AAGUIDS'],
    [{ STEP_UP_MAX_AGE: '10' }, 'STEP_UP_MAX_AGE'],
    [{ STEP_UP_MAX_AGE: '10m' }, 'STEP_UP_MAX_AGE'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'TRUE' }, 'WEBHOOK_ALLOW_PRIVATE'],
    [{ EMAIL_FACTOR: 'true' }, 'EMAIL_FACTOR'],
    [{ SMS_ENROLMENT_HOURLY_LIMIT: '1000' }, 'SMS_ENROLMENT_HOURLY_LIMIT'],
    [{ SMS_GLOBAL_HOURLY_LIMIT: '100', SMS_ENROLMENT_HOURLY_LIMIT: '100' }, 'SMS_ENROLMENT_HOURLY_LIMIT'],
    [{ SECRET_KEY: 'k'.repeat(31) }, 'SECRET_KEY'],
    [{ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL'],
    [{ ACCESS_TOKEN_TTL: '86401' }, 'ACCESS_TOKEN_TTL'],
    [{ ACCESS_TOKEN_TTL: '15m' }, 'ACCESS_TOKEN_TTL'],
    [{ REFRESH_TOKEN_TTL: '59' }, 'REFRESH_TOKEN_TTL'],
    [{ REFRESH_TOKEN_TTL: 'forever' }, 'REFRESH_TOKEN_TTL'],
    [{ SMS_PROVIDER: 'carrier-pigeon' }, 'SMS_PROVIDER'],
    [{ SMS_PROVIDER: 'Twilio' }, 'SMS_PROVIDER'],
    [{ SMS_USER_HOURLY_LIMIT: '0' }, 'SMS_USER_HOURLY_LIMIT'],
    [{ SMS_NUMBER_HOURLY_LIMIT: 'lots' }, 'SMS_NUMBER_HOURLY_LIMIT'],
    [{ SMS_GLOBAL_HOURLY_LIMIT: '0' }, 'SMS_GLOBAL_HOURLY_LIMIT'],
    [{ DATABASE_POOL_MAX: '0' }, 'DATABASE_POOL_MAX'],
    [{ DATABASE_CONNECT_TIMEOUT_MS: 'soon' }, 'DATABASE_CONNECT_TIMEOUT_MS'],
    [{ SMS_ALLOWED_COUNTRIES: 'XX' }, 'SMS_ALLOWED_COUNTRIES'],
    [{ SMS_ALLOWED_COUNTRIES: 'US,XX' }, 'SMS_ALLOWED_COUNTRIES'],
    [{ SMS_ALLOWED_COUNTRIES: 'US,,GB' }, 'SMS_ALLOWED_COUNTRIES'],
    [{ SMS_ALLOWED_COUNTRIES: 'USA' }, 'SMS_ALLOWED_COUNTRIES'],
    [{ SERVICE_NAME: 'MFA <script>' }, 'SERVICE_NAME'],
    [{ SERVICE_NAME: 'x'.repeat(41) }, 'SERVICE_NAME'],
    [{ ...TWILIO, TWILIO_API_URL: 'ftp://api.twilio.com' }, 'TWILIO_API_URL'],
    [{ ...TWILIO, TWILIO_API_URL: 'not a url' }, 'TWILIO_API_URL'],
  ];
  test('a postgres DATABASE_URL refused is not quoted back: it holds the password', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'postgres://mfa:s3cret-pw@localhost:abc/mfa' }),
      (error: Error) => error.message.startsWith('DATABASE_URL') && !error.message.includes('s3cret-pw'),
    );
  });

  for (const [env, variable] of cases) {
    test(`${JSON.stringify(env).slice(0, 90)} throws a ConfigError naming ${variable}`, () => {
      assert.throws(() => loadConfig(env), namesVariable(variable));
    });
  }
});

describe('loadConfig for production', () => {
  test('NODE_ENV=production refuses the console SMS sink, by default or asked for', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production' }), namesVariable('SMS_PROVIDER'));
    assert.throws(() => loadConfig({ NODE_ENV: 'production', SMS_PROVIDER: 'console' }), namesVariable('SMS_PROVIDER'));
  });

  test('NODE_ENV=production refuses to start without SECRET_KEY, which keeps the signing keys sealed', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production', ...TWILIO }), namesVariable('SECRET_KEY'));
  });

  test('NODE_ENV=production refuses to start without SMTP_URL: email codes must reach people, not the console', () => {
    assert.throws(
      () => loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(32), ...TWILIO }),
      namesVariable('SMTP_URL'),
    );
  });

  test('NODE_ENV=production with Twilio, SMTP and SECRET_KEY configured starts, flagged as production', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      SECRET_KEY: 'k'.repeat(32),
      SMTP_URL: 'smtp://user:pass@smtp.example.com:587',
      ...TWILIO,
    });
    assert.equal(config.isProduction, true);
    assert.equal(config.sms.kind, 'twilio');
  });

  test('other NODE_ENV values keep the console sink', () => {
    for (const nodeEnv of ['development', 'test']) {
      const config = loadConfig({ NODE_ENV: nodeEnv });
      assert.equal(config.isProduction, false);
      assert.equal(config.sms.kind, 'console');
    }
  });
});

describe('loadConfig for mail (CONTRACT §20)', () => {
  test("without SMTP_URL mail goes to the console, from no-reply at the issuer's host", () => {
    assert.deepEqual(loadConfig({ ISSUER: 'https://auth.example.com' }).mail, {
      kind: 'console',
      from: 'no-reply@auth.example.com',
    });
  });

  test('SMTP_URL, MAIL_FROM with a name, and a 10 s timeout by default', () => {
    assert.deepEqual(
      loadConfig({ SMTP_URL: 'smtps://user:pass@smtp.example.com:465', MAIL_FROM: 'Example <auth@example.com>' }).mail,
      {
        kind: 'smtp',
        url: 'smtps://user:pass@smtp.example.com:465',
        from: 'Example <auth@example.com>',
        timeoutMs: 10_000,
      },
    );
  });

  test('an SMTP_URL that is not smtp(s):// or a MAIL_FROM that is no address is refused, the URL not quoted back', () => {
    for (const url of ['http://smtp.example.com', 'smtp://', 'not a url with pass:secret']) {
      assert.throws(
        () => loadConfig({ SMTP_URL: url }),
        (error: Error) => {
          assert.match(error.message, /^SMTP_URL/);
          assert.ok(!error.message.includes('secret'));
          return true;
        },
      );
    }
    assert.throws(() => loadConfig({ MAIL_FROM: 'nobody' }), namesVariable('MAIL_FROM'));
  });
});

describe('loadConfig for Twilio', () => {
  test('a complete setup: credentials, sender, default API URL and a 10 s timeout', () => {
    assert.deepEqual(loadConfig(TWILIO).sms, {
      kind: 'twilio',
      accountSid: TWILIO.TWILIO_ACCOUNT_SID,
      authToken: TWILIO.TWILIO_AUTH_TOKEN,
      from: TWILIO.TWILIO_FROM,
      messagingServiceSid: undefined,
      apiUrl: 'https://api.twilio.com',
      timeoutMs: 10_000,
    });
  });

  test('a Messaging Service instead of a From number', () => {
    const { TWILIO_FROM: _from, ...rest } = TWILIO;
    const sms = loadConfig({ ...rest, TWILIO_MESSAGING_SERVICE_SID: 'MG00000000000000000000000000000001' }).sms;
    assert.equal(sms.kind, 'twilio');
    assert.equal(sms.kind === 'twilio' && sms.messagingServiceSid, 'MG00000000000000000000000000000001');
    assert.equal(sms.kind === 'twilio' && sms.from, undefined);
  });

  test('TWILIO_API_URL is read and loses trailing slashes', () => {
    const sms = loadConfig({ ...TWILIO, TWILIO_API_URL: 'http://127.0.0.1:9999/' }).sms;
    assert.equal(sms.kind === 'twilio' && sms.apiUrl, 'http://127.0.0.1:9999');
  });

  test('TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN are required', () => {
    for (const variable of ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN'] as const) {
      const env: Record<string, string> = { ...TWILIO };
      delete env[variable];
      assert.throws(() => loadConfig(env), namesVariable(variable), `without ${variable}`);
      assert.throws(() => loadConfig({ ...env, [variable]: '' }), namesVariable(variable), `with ${variable} empty`);
    }
  });

  test('exactly one of TWILIO_FROM and TWILIO_MESSAGING_SERVICE_SID: neither is refused, both are refused', () => {
    const { TWILIO_FROM: _from, ...neither } = TWILIO;
    assert.throws(() => loadConfig(neither), namesVariable('TWILIO_FROM'));
    assert.throws(() => loadConfig(neither), namesVariable('TWILIO_MESSAGING_SERVICE_SID'));
    const both = { ...TWILIO, TWILIO_MESSAGING_SERVICE_SID: 'MG00000000000000000000000000000001' };
    assert.throws(() => loadConfig(both), namesVariable('TWILIO_FROM'));
    assert.throws(() => loadConfig(both), namesVariable('TWILIO_MESSAGING_SERVICE_SID'));
  });

  test('Twilio variables are ignored while SMS_PROVIDER is console', () => {
    const config = loadConfig({ TWILIO_ACCOUNT_SID: 'AC1', TWILIO_FROM: '+15005550006' });
    assert.deepEqual(config.sms, { kind: 'console' });
  });
});

describe('the loaded configuration', () => {
  test('is frozen, nested objects too: assignments throw', () => {
    const config = loadConfig({ ...TWILIO, SMS_ALLOWED_COUNTRIES: 'US' });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.sms));
    assert.ok(Object.isFrozen(config.smsLimits));
    assert.ok(Object.isFrozen(config.smsLimits.allowedCountries));
    const writable = config as any;
    assert.throws(() => {
      writable.port = 1;
    }, TypeError);
    assert.throws(() => {
      writable.sms.authToken = 'stolen';
    }, TypeError);
    assert.throws(() => {
      writable.smsLimits.maxAttempts = 1_000_000;
    }, TypeError);
    assert.throws(() => {
      writable.smsLimits.allowedCountries.push('XX');
    }, TypeError);
    assert.equal(config.port, 8000);
    assert.equal(config.smsLimits.maxAttempts, 5);
  });

  test('does not keep a reference to the environment it was read from', () => {
    const env: Record<string, string> = { PORT: '9000' };
    const config = loadConfig(env);
    env.PORT = '1';
    assert.equal(config.port, 9000);
  });
});

describe('loadConfig for the SMS fraud defence (CONTRACT §15)', () => {
  test('defaults: the contract’s blocked line types, 100 enrolment SMS per country and 5 per range an hour, pause past 10 × the average and at least 20, no fallback', () => {
    const config = loadConfig({});
    assert.deepEqual(config.smsLimits.blockedLineTypes, [
      'PREMIUM_RATE',
      'SHARED_COST',
      'TOLL_FREE',
      'UAN',
      'VOICEMAIL',
      'PAGER',
      'NON_GEOGRAPHIC',
    ]);
    assert.deepEqual(config.smsLimits.perCountryPerHour, { default: 100, byCountry: {} });
    assert.equal(config.smsLimits.perRangePerHour, 5);
    assert.deepEqual(config.smsLimits.anomaly, { multiple: 10, floor: 20 });
    assert.equal(config.smsFallback, undefined);
  });

  test('SMS_COUNTRY_HOURLY_LIMIT: a bare number for every country, CC=N for one, in any case and order', () => {
    const limits = (raw: string) => loadConfig({ SMS_COUNTRY_HOURLY_LIMIT: raw }).smsLimits.perCountryPerHour;
    assert.deepEqual(limits('100,US=500,GB=200'), { default: 100, byCountry: { US: 500, GB: 200 } });
    assert.deepEqual(limits('us=500, 40'), { default: 40, byCountry: { US: 500 } });
    assert.deepEqual(limits('US=500'), { default: 100, byCountry: { US: 500 } });
    assert.deepEqual(limits('7'), { default: 7, byCountry: {} });
  });

  test('SMS_BLOCKED_LINE_TYPES: a list of types in any case, or none', () => {
    const blocked = (raw: string) => loadConfig({ SMS_BLOCKED_LINE_TYPES: raw }).smsLimits.blockedLineTypes;
    assert.deepEqual(blocked('premium_rate, VOIP,non_geographic'), ['PREMIUM_RATE', 'VOIP', 'NON_GEOGRAPHIC']);
    assert.deepEqual(blocked('none'), []);
    assert.deepEqual(blocked('TOLL_FREE,TOLL_FREE'), ['TOLL_FREE']);
  });

  test('SMS_RANGE_HOURLY_LIMIT, SMS_ANOMALY_MULTIPLE and SMS_ANOMALY_FLOOR are read as integers', () => {
    const limits = loadConfig({
      SMS_RANGE_HOURLY_LIMIT: '3',
      SMS_ANOMALY_MULTIPLE: '4',
      SMS_ANOMALY_FLOOR: '50',
    }).smsLimits;
    assert.equal(limits.perRangePerHour, 3);
    assert.deepEqual(limits.anomaly, { multiple: 4, floor: 50 });
  });

  test('a second Twilio account as fallback: its own credentials, sender and API URL', () => {
    const config = loadConfig({
      ...TWILIO,
      SMS_FALLBACK_PROVIDER: 'twilio',
      TWILIO_FALLBACK_ACCOUNT_SID: 'AC00000000000000000000000000000002',
      TWILIO_FALLBACK_AUTH_TOKEN: 'second-auth-token',
      TWILIO_FALLBACK_FROM: '+15005550007',
    });
    assert.deepEqual(config.smsFallback, {
      kind: 'twilio',
      accountSid: 'AC00000000000000000000000000000002',
      authToken: 'second-auth-token',
      from: '+15005550007',
      messagingServiceSid: undefined,
      apiUrl: 'https://api.twilio.com',
      timeoutMs: 10_000,
    });
  });

  test('Vonage as fallback: key, secret, sender, and the SMS API’s URL by default', () => {
    const vonage = {
      SMS_FALLBACK_PROVIDER: 'vonage',
      VONAGE_API_KEY: 'abcd1234',
      VONAGE_API_SECRET: 's3cr3t',
      VONAGE_FROM: 'MFA',
    };
    assert.deepEqual(loadConfig({ ...TWILIO, ...vonage }).smsFallback, {
      kind: 'vonage',
      apiKey: 'abcd1234',
      apiSecret: 's3cr3t',
      from: 'MFA',
      apiUrl: 'https://rest.nexmo.com',
      timeoutMs: 10_000,
    });
    const local = loadConfig({ ...TWILIO, ...vonage, VONAGE_API_URL: 'http://127.0.0.1:9000/' }).smsFallback;
    assert.equal(local?.apiUrl, 'http://127.0.0.1:9000');
  });

  const vonage = { SMS_FALLBACK_PROVIDER: 'vonage', VONAGE_API_KEY: 'k', VONAGE_API_SECRET: 's', VONAGE_FROM: 'MFA' };
  const cases: [Record<string, string>, string][] = [
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'lots' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: '0' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'US=0' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'US:500' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'XX=5' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'USA=5' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: '100,200' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: 'US=1,us=2' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_COUNTRY_HOURLY_LIMIT: '100,,US=5' }, 'SMS_COUNTRY_HOURLY_LIMIT'],
    [{ SMS_RANGE_HOURLY_LIMIT: '0' }, 'SMS_RANGE_HOURLY_LIMIT'],
    [{ SMS_RANGE_HOURLY_LIMIT: 'five' }, 'SMS_RANGE_HOURLY_LIMIT'],
    [{ SMS_BLOCKED_LINE_TYPES: 'MOBILE' }, 'SMS_BLOCKED_LINE_TYPES'],
    [{ SMS_BLOCKED_LINE_TYPES: 'PREMIUM' }, 'SMS_BLOCKED_LINE_TYPES'],
    [{ SMS_ANOMALY_MULTIPLE: '0' }, 'SMS_ANOMALY_MULTIPLE'],
    [{ SMS_ANOMALY_MULTIPLE: '2.5' }, 'SMS_ANOMALY_MULTIPLE'],
    [{ SMS_ANOMALY_FLOOR: '-1' }, 'SMS_ANOMALY_FLOOR'],
    [{ SMS_FALLBACK_PROVIDER: 'vonage' }, 'SMS_FALLBACK_PROVIDER'],
    [{ ...TWILIO, SMS_FALLBACK_PROVIDER: 'sinch' }, 'SMS_FALLBACK_PROVIDER'],
    [{ ...TWILIO, SMS_FALLBACK_PROVIDER: 'twilio' }, 'TWILIO_FALLBACK_ACCOUNT_SID'],
    [
      {
        ...TWILIO,
        SMS_FALLBACK_PROVIDER: 'twilio',
        TWILIO_FALLBACK_ACCOUNT_SID: 'AC2',
        TWILIO_FALLBACK_AUTH_TOKEN: 't',
      },
      'TWILIO_FALLBACK_FROM',
    ],
    [
      {
        ...TWILIO,
        SMS_FALLBACK_PROVIDER: 'twilio',
        TWILIO_FALLBACK_ACCOUNT_SID: 'AC2',
        TWILIO_FALLBACK_AUTH_TOKEN: 't',
        TWILIO_FALLBACK_FROM: '+15005550007',
        TWILIO_FALLBACK_API_URL: 'twilio',
      },
      'TWILIO_FALLBACK_API_URL',
    ],
    [{ ...TWILIO, ...vonage, VONAGE_API_SECRET: '' }, 'VONAGE_API_SECRET'],
    [{ ...TWILIO, ...vonage, VONAGE_FROM: '' }, 'VONAGE_FROM'],
    [{ ...TWILIO, ...vonage, VONAGE_API_URL: 'ftp://rest.nexmo.com' }, 'VONAGE_API_URL'],
  ];
  for (const [env, variable] of cases) {
    test(`${JSON.stringify(env).slice(0, 120)} stops start-up naming ${variable}`, () => {
      assert.throws(() => loadConfig(env), namesVariable(variable));
    });
  }
});
