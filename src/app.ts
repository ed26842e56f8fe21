import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import type { Kysely } from 'kysely';
import pino, { type DestinationStream } from 'pino';
import { createAuditTrail } from './audit/audit-trail.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { deriveKey } from './crypto/secrets.js';
import { writeAnswersPerTurn } from './http/answers-per-turn.js';
import type { App } from './http/app-types.js';
import { createRequireAccessToken, createRequireAdmin, createRequireMetricsToken } from './http/authenticate.js';
import { createCookies } from './http/cookies.js';
import { registerCors } from './http/cors.js';
import { missingHostError, preRoutingErrorOptions, registerErrorHandling } from './http/error-handler.js';
import { registerJsonBodies } from './http/json-body.js';
import { contextOf, createClientAddressResolver, lazyRequestLogger, requestIdFor } from './http/request-context.js';
import { adminRoutes } from './http/routes/admin.js';
import { deviceRoutes } from './http/routes/devices.js';
import { emailRoutes } from './http/routes/email.js';
import { emailFactorRoutes } from './http/routes/email-factor.js';
import { inviteRoutes } from './http/routes/invites.js';
import { languageRoutes } from './http/routes/language.js';
import { mfaRoutes } from './http/routes/mfa.js';
import { oauthRoutes, REVOCATION_PATH, TOKEN_PATH } from './http/routes/oauth.js';
import { DISCOVERY_PATHS, JWKS_PATH, oauthMetadataRoutes } from './http/routes/oauth-metadata.js';
import { openIdRoutes, USERINFO_PATH } from './http/routes/openid.js';
import { operationsRoutes } from './http/routes/operations.js';
import { operatorViewRoutes } from './http/routes/operator-views.js';
import { findPageDir, loadPage, type Page, pageRoutes } from './http/routes/pages.js';
import { passwordRoutes } from './http/routes/password.js';
import { recoveryRoutes } from './http/routes/recovery.js';
import { recoveryRequestRoutes } from './http/routes/recovery-requests.js';
import { serviceDescriptionRoutes } from './http/routes/service-description.js';
import { smsRoutes } from './http/routes/sms.js';
import { totpRoutes } from './http/routes/totp.js';
import { webauthnRoutes } from './http/routes/webauthn.js';
import { buildSharedSerializer } from './http/serializers.js';
import { translate } from './i18n/messages.js';
import { createAttemptLimiter } from './limits/attempt-limiter.js';
import { createRememberedDevices } from './logins/remembered-devices.js';
import { createSessions } from './logins/sessions.js';
import { createSignInSessions } from './logins/sign-in-sessions.js';
import { createStepUp } from './logins/step-up.js';
import { createUserThrottles } from './logins/user-throttles.js';
import { createConsoleMailSender } from './mail/console-sender.js';
import { createSmtpSender } from './mail/smtp-sender.js';
import { createMetrics } from './metrics/metrics.js';
import { createBackupCodes } from './mfa/backup-codes.js';
import { createCountryBudgets } from './mfa/country-budgets.js';
import { createEnrolment } from './mfa/enrolment.js';
import { createEmailFactor } from './mfa/factors/email.js';
import type { SecondFactors } from './mfa/factors/factor.js';
import { createSmsFactor } from './mfa/factors/sms.js';
import { createTotpFactor } from './mfa/factors/totp.js';
import { createWebauthnFactor } from './mfa/factors/webauthn.js';
import { createGuessBudget } from './mfa/guess-budget.js';
import { createLoginChallenge } from './mfa/login-challenge.js';
import { createMfaRemoval } from './mfa/mfa-removal.js';
import { createOneTimeCodes } from './mfa/one-time-codes.js';
import { parsePhoneNumber } from './mfa/phone-numbers.js';
import { createRecoveryRequests } from './mfa/recovery-requests.js';
import { createSecurityNotices } from './notices/security-notices.js';
import { createAccessTokens } from './oauth/access-tokens.js';
import { createAuthorizationCodes } from './oauth/authorization-codes.js';
import { createClients } from './oauth/clients.js';
import { CONSOLE_PATH, consoleClientOf } from './oauth/console-client.js';
import { createHostedSignIn } from './oauth/hosted-sign-in.js';
import { createIdTokens } from './oauth/id-tokens.js';
import { createIntrospection } from './oauth/introspection.js';
import { createLoginThrottle } from './oauth/login-throttle.js';
import { createPasswordCheck } from './oauth/password-check.js';
import { createPasswordGrant } from './oauth/password-grant.js';
import { createRefreshGrant } from './oauth/refresh-grant.js';
import { createRevocation } from './oauth/revocation.js';
import { createSigningKeys } from './oauth/signing-keys.js';
import { createTokenIssuer } from './oauth/token-issuer.js';
import { createMessageOutbox, MESSAGE_SEALING_PURPOSE } from './outbox/message-outbox.js';
import { createMessageWorker } from './outbox/message-worker.js';
import { createRetentionWorker } from './retention/retention-worker.js';
import { createConsoleSender } from './sms/console-sender.js';
import { createSmsDelivery } from './sms/failover.js';
import type { SmsSender } from './sms/sms-sender.js';
import { createTwilioSender } from './sms/twilio-sender.js';
import { createVonageSender } from './sms/vonage-sender.js';
import type { Database } from './store/database.js';
import { checkSchemaIsCurrent } from './store/migrate.js';
import { createStore } from './store/store.js';
import type { Tracing } from './tracing.js';
import { createAccounts } from './users/accounts.js';
import { createEmails } from './users/emails.js';
import { createInviteRedemption, createInvites } from './users/invites.js';
import { createUserLanguages } from './users/languages.js';
import { createPasswordReset } from './users/password-reset.js';
import { createPasswords } from './users/passwords.js';
import { createDeliveryWorker } from './webhooks/delivery-worker.js';
import { createWebhookEndpoints, WEBHOOK_SEALING_PURPOSE } from './webhooks/endpoints.js';
import { readOutboxState } from './webhooks/outbox.js';

export interface AppDeps {
  /** A migrated database; the caller owns it and closes it after the app. */
  db: Kysely<Database>;
  clock?: Clock;
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  /** Where the console SMS sink prints (default stderr). */
  consoleSmsWrite?: (line: string) => void;
  /** Where the console mail sink prints, when SMTP_URL is unset (default stderr). */
  consoleMailWrite?: (line: string) => void;
  /** The folder of the built pages, one folder each (default: dist/ of this checkout). */
  pagesDir?: string;
  /** OpenTelemetry, when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/tracing.ts). */
  tracing?: Tracing;
  /** How often the node asks whether the hourly retention clean-up is due (default a minute). */
  retentionCheckEveryMs?: number;
}

/** The browser pages, each built from web/<name>/ into dist/<name>/ and served at /<name>/. */
const PAGE_NAMES = ['account', 'sign-in', 'console', 'account/reset'] as const;
/** Where a page is served when not at /<name>/. */
const PAGE_PATHS: Partial<Record<(typeof PAGE_NAMES)[number], string>> = { console: CONSOLE_PATH };

/** Paths the logger blanks, should anything ever put them in a log line. */
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.mfa_code',
  '*.backup_code',
  '*.client_secret',
  '*.access_token',
  '*.refresh_token',
  '*.token',
];

/** Builds the service on a migrated database; never listens and never reads process.env. */
export async function buildApp(config: Config, deps: AppDeps): Promise<App> {
  const clock = deps.clock ?? systemClock;
  const rootLogger = pino(
    { level: config.logLevel, redact: { paths: REDACTED, censor: '[redacted]' } },
    deps.logStream,
  );
  const app: App = Fastify({
    loggerInstance: rootLogger as FastifyBaseLogger,
    bodyLimit: 65_536,
    // Strings stay strings: a JSON number where a phone number belongs is a 400, not "coerced".
    // verbose: a failed check carries its schema, whose description tells the caller what to send.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, verbose: true } },
    routerOptions: { ignoreTrailingSlash: true },
    schemaController: { compilersFactory: { buildSerializer: buildSharedSerializer } },
    requestIdHeader: false,
    genReqId: requestIdFor,
    childLoggerFactory: lazyRequestLogger,
    // One line per request (in onResponse below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    ...preRoutingErrorOptions,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Before any route, so that every request is a span (with the caller's traceparent as its parent).
  if (deps.tracing) await app.register(deps.tracing.fastifyPlugin);

  const store = createStore(deps.db);
  if (!config.secretKey) {
    rootLogger.warn(
      'SECRET_KEY is not set: code hashes are keyed, and signing keys kept, in the database alone; set it in production',
    );
  }
  if (!config.adminToken) {
    rootLogger.info(
      "ADMIN_TOKEN is not set: scripts cannot use the admin API (every /admin/ call without an operator's access token answers 401); set it to use the API from scripts, or use the admin command line",
    );
  }
  const hashSecret = await store.secrets.findServiceSecret(config.secretKey, clock.now());
  const codeKey = deriveKey(hashSecret, 'one-time-code-hash');
  // CONTRACT §16/§20: every mail and SMS the service sends on its own goes through one outbox.
  const messageSealingKey = deriveKey(hashSecret, MESSAGE_SEALING_PURPOSE);
  const outbox = createMessageOutbox({ clock, sealingKey: messageSealingKey });
  const notices = createSecurityNotices({ outbox, serviceName: config.serviceName, issuer: config.issuer });
  const audit = createAuditTrail({ store, clock, notices });
  const countries = createCountryBudgets({ store, clock, limits: config.smsLimits, audit });
  const { registry, metrics } = createMetrics({
    countEnabledUsers: () => store.factors.countUsersWithMfa(),
    readOutbox: () => readOutboxState(store, clock.now()),
    listPausedCountries: () => countries.listPausedCountries(),
  });
  const smsSender: SmsSender =
    config.sms.kind === 'twilio'
      ? createTwilioSender(config.sms)
      : createConsoleSender(deps.consoleSmsWrite ?? ((line) => process.stderr.write(line)));
  const fallback = config.smsFallback;
  const smsFallback =
    fallback?.kind === 'twilio'
      ? createTwilioSender(fallback, 'twilio_fallback')
      : fallback && createVonageSender(fallback);
  const smsDelivery = createSmsDelivery({ primary: smsSender, fallback: smsFallback, clock });
  const mail =
    config.mail.kind === 'smtp'
      ? createSmtpSender(config.mail)
      : createConsoleMailSender(deps.consoleMailWrite ?? ((line) => process.stderr.write(line)));
  const codes = createOneTimeCodes({
    store,
    sms: smsDelivery,
    countries,
    clock,
    codeKey,
    limits: config.smsLimits,
    smsText: (code, language) =>
      translate(language, 'sms_code', {
        service: config.serviceName,
        code,
        count: config.smsLimits.codeTtlSeconds / 60,
      }),
    mail,
    emailText: (code, language) => {
      const values = { service: config.serviceName, code, count: config.smsLimits.codeTtlSeconds / 60 };
      return {
        subject: translate(language, 'email_factor_code_subject', values),
        text: translate(language, 'email_factor_code', values),
      };
    },
    metrics,
  });
  const keys = await createSigningKeys({
    store,
    clock,
    secretKey: config.secretKey,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  });
  const accessTokens = createAccessTokens({
    store,
    keys,
    clock,
    issuer: config.issuer,
    ttlSeconds: config.accessTokenTtlSeconds,
  });
  const tokens = createTokenIssuer({ store, accessTokens, clock, refreshTtlSeconds: config.refreshTokenTtlSeconds });
  const sessions = createSessions({ accessTokenTtlSeconds: config.accessTokenTtlSeconds });
  const refreshGrant = createRefreshGrant({ store, tokens, sessions, audit, clock });
  const revocation = createRevocation({ store, accessTokens, refreshGrant, clock });
  const introspection = createIntrospection({ store, accessTokens, clock, issuer: config.issuer });
  const clients = createClients({ store, clock });
  const removal = createMfaRemoval({ store, sessions, audit, clock });
  const stepUp = createStepUp({ store, clock, maxAgeSeconds: config.stepUpMaxAgeSeconds });
  const enrolment = createEnrolment({ store, sessions, removal, stepUp, audit, clock });
  const backupCodes = createBackupCodes({ store, stepUp, clock, codeKey, audit });
  const limiter = createAttemptLimiter({ store, clock });
  const throttle = createLoginThrottle({ limiter, audit, throttleKey: deriveKey(hashSecret, 'login-throttle') });
  const guesses = createGuessBudget({ limiter, audit });
  const userThrottles = createUserThrottles({
    limiter,
    usernameScope: throttle.usernameScope,
    guessScopes: guesses.scopesOf,
  });
  // Every kind of second factor, by type: the password grant reaches them only through this map.
  const sms = createSmsFactor({
    store,
    codes,
    enrolment,
    audit,
    blockedLineTypes: config.smsLimits.blockedLineTypes,
  });
  const totp = createTotpFactor({
    store,
    guesses,
    metrics,
    enrolment,
    audit,
    clock,
    sealingKey: deriveKey(hashSecret, 'factor-secret-sealing'),
    serviceName: config.serviceName,
  });
  const webauthn = createWebauthnFactor({
    store,
    enrolment,
    guesses,
    audit,
    metrics,
    clock,
    settings: config.webauthn,
    challengeKey: deriveKey(hashSecret, 'passkey-sign-in-challenge'),
  });
  const emailFactor = createEmailFactor({ store, codes, enrolment, audit, isOffered: config.emailFactor });
  const factors: SecondFactors = { sms, totp, webauthn, email: emailFactor };
  const loginChallenge = createLoginChallenge({ store, factors, backupCodes, guesses, audit, clock });
  const passwords = createPasswordCheck({ store, throttle, audit });
  const recovery = createRecoveryRequests({
    store,
    passwords,
    removal,
    audit,
    outbox,
    metrics,
    clock,
    delaySeconds: config.recoveryDelaySeconds,
    serviceName: config.serviceName,
  });
  const passwordGrant = createPasswordGrant({
    store,
    loginChallenge,
    passwords,
    passkeys: webauthn,
    recovery,
    tokens,
    audit,
    metrics,
    clock,
  });
  const accounts = createAccounts({ store, clock, audit, sessions });
  const invites = createInvites({ store, audit, clock, issuer: config.issuer });
  const inviteRedemption = createInviteRedemption({ store, passkeys: webauthn, tokens, audit, clock });
  const messageWorker = createMessageWorker({
    store,
    clock,
    sealingKey: messageSealingKey,
    metrics,
    log: rootLogger,
    // Channels by name, as second factors are: a new channel is a sender and an entry.
    channels: {
      email: (message, log, messageId) => mail.send({ ...message, messageId }, log),
      sms: ({ phoneNumber, body }, log) => {
        const phone = parsePhoneNumber(phoneNumber);
        return smsDelivery.deliver({ toE164: phone.e164, body }, log, (attempt) =>
          metrics.smsSent('notice', phone.callingCode, attempt.outcome, attempt.provider, attempt.durationSeconds),
        );
      },
    },
  });
  const emails = createEmails({
    store,
    outbox,
    sendNow: messageWorker.attempt,
    stepUp,
    audit,
    clock,
    codeKey,
    limits: config.smsLimits,
    serviceName: config.serviceName,
  });
  const passwordChanges = createPasswords({ store, passwords, stepUp, sessions, audit, clock });
  const passwordReset = createPasswordReset({
    store,
    outbox,
    sessions,
    audit,
    clock,
    key: deriveKey(hashSecret, 'password-reset'),
    issuer: config.issuer,
    serviceName: config.serviceName,
  });
  const webhookSettings = {
    sealingKey: deriveKey(hashSecret, WEBHOOK_SEALING_PURPOSE),
    allowPrivate: config.webhookAllowPrivate,
  };
  const webhooks = createWebhookEndpoints({ store, clock, ...webhookSettings });
  const deliveryWorker = createDeliveryWorker({ store, clock, metrics, log: rootLogger, ...webhookSettings });
  const retentionWorker = createRetentionWorker({
    store,
    clock,
    retentionDays: config.auditRetentionDays,
    log: rootLogger,
    checkEveryMs: deps.retentionCheckEveryMs,
  });
  const requireAccessToken = createRequireAccessToken(accessTokens);
  const requireAdmin = createRequireAdmin({
    adminToken: config.adminToken,
    accessTokens,
    isOperator: (userId) => store.users.isOperator(userId),
    stepUpMaxAgeSeconds: config.stepUpMaxAgeSeconds,
    clock,
  });
  // CONTRACT §21: every change an operator makes through the admin API is an audit event (and a
  // webhook) naming the operator, the route and what it was done to.
  // onSend: recorded before the answer leaves, so whoever reads the trail after it finds the event.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.operator || request.method === 'GET' || request.method === 'HEAD' || reply.statusCode >= 400) {
      return payload;
    }
    const params = request.params as { id?: unknown; country?: unknown } | undefined;
    const target = params?.id ?? params?.country;
    await audit.record('operator_action', 'succeeded', {
      userId: request.operator.userId,
      context: contextOf(request),
      detail: {
        operator_id: request.operator.userId,
        action: `${request.method} ${request.routeOptions.url ?? ''}`,
        ...(typeof target === 'string' && { target_id: target }),
      },
    });
    return payload;
  });
  const pages = Object.fromEntries(
    PAGE_NAMES.map((name) => {
      const dir = findPageDir(name, deps.pagesDir);
      const page = loadPage(dir);
      if (!page) {
        rootLogger.warn(
          `the ${name} page is not built (no ${dir ?? `dist/${name} beside a package.json`}/index.html): ${PAGE_PATHS[name] ?? `/${name}/`} answers 503; run npm run build`,
        );
      }
      return [name, page];
    }),
  ) as Record<(typeof PAGE_NAMES)[number], Page | undefined>;
  const stylesheetName = [...(pages['sign-in']?.assets.keys() ?? [])].find((name) => name.endsWith('.css'));

  // OpenID Connect (CONTRACT §18): the browser's sign-in session, codes, ID tokens, the hosted sign-in.
  // The operators' console is a client of it, written at every start (CONTRACT §21).
  await store.clients.putClient(consoleClientOf(config.issuer), clock.now());
  const csrfKey = deriveKey(hashSecret, 'browser-flow-csrf');
  const idTokens = createIdTokens({ keys, clock, issuer: config.issuer, ttlSeconds: config.accessTokenTtlSeconds });
  const signInSessions = createSignInSessions({
    store,
    sessions,
    clock,
    settings: { ttlSeconds: config.ssoSessionTtlSeconds, idleTtlSeconds: config.ssoSessionIdleTtlSeconds },
  });
  const authorizationCodes = createAuthorizationCodes({ store, tokens, idTokens, sessions, audit, clock });
  const rememberedDevices = createRememberedDevices({ store, clock });
  const signIn = createHostedSignIn({
    store,
    factors,
    passkeys: webauthn,
    loginChallenge,
    passwords,
    signInSessions,
    rememberedDevices,
    codes: authorizationCodes,
    recovery,
    audit,
    metrics,
    clock,
    issuer: config.issuer,
    serviceName: config.serviceName,
    csrfKey,
  });
  const cookies = createCookies(config.issuer);

  const clientAddressOf = createClientAddressResolver(config.trustedProxies);
  app.decorateRequest('clientAddress', {
    getter() {
      return clientAddressOf(this.raw);
    },
  });
  // The one hook every request runs, first, so that every answer, errors included, names its
  // request. Answers name users, phone numbers, codes and tokens: no cache keeps one unless its
  // route says so, by setting its own Cache-Control.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    done(missingHostError(request));
  });
  registerErrorHandling(app);
  writeAnswersPerTurn(app);
  // Only JSON (and forms, on the OAuth endpoints) are bodies here; anything else is a 415.
  app.removeContentTypeParser('text/plain');
  registerJsonBodies(app);
  // The one line a request, on every request: written by a logger without the redaction pass, which
  // costs each field of each line a call and holds nothing this line could carry. The line holds
  // only what is set here (the request's id, its method, its route template, its status, the error
  // code it answered, if any, and its time); anything else logged goes through the redacting logger.
  const requestLines = rootLogger.child({}, { redact: [] });
  app.addHook('onResponse', (request, reply, done) => {
    // The route, not the URL: a URL may carry a password or token in its query string, or a phone
    // number in a path that matches no route.
    const route = request.routeOptions.url ?? 'unmatched';
    const ms = reply.elapsedTime;
    requestLines.info(
      {
        reqId: request.id,
        method: request.method,
        route,
        status: reply.statusCode,
        error: reply.errorCode,
        ms: Math.round(ms * 10) / 10,
      },
      'request served',
    );
    metrics.requestServed(route, request.method, reply.statusCode, ms / 1000);
    done();
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'MFA service',
        version: '1',
        description: 'SMS second factor and OAuth 2.0 tokens for a REST API',
      },
      servers: [{ url: config.issuer }],
      components: {
        securitySchemes: {
          accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          adminToken: { type: 'http', scheme: 'bearer' },
          clientSecretBasic: { type: 'http', scheme: 'basic' },
        },
      },
    },
  });

  // The whole API, in one list.
  mfaRoutes(app, { enrolment, accessTokens, requireAccessToken });
  smsRoutes(app, { sms, requireAccessToken });
  totpRoutes(app, { totp, requireAccessToken });
  webauthnRoutes(app, { webauthn, requireAccessToken });
  recoveryRoutes(app, { backupCodes, requireAccessToken });
  recoveryRequestRoutes(app, { recovery, passwordGrant, clients, requireAccessToken });
  passwordRoutes(app, { passwords: passwordChanges, reset: passwordReset, requireAccessToken });
  emailRoutes(app, { emails, requireAccessToken });
  languageRoutes(app, { languages: createUserLanguages({ store, audit }), requireAccessToken });
  emailFactorRoutes(app, { emailFactor, requireAccessToken });
  deviceRoutes(app, { devices: rememberedDevices, audit, requireAccessToken });
  operatorViewRoutes(app, { store, clock, countries, userThrottles, requireAdmin });
  inviteRoutes(app, { invites: inviteRedemption });
  await app.register(cookie);
  registerCors(app, {
    forClients: [TOKEN_PATH, USERINFO_PATH, REVOCATION_PATH],
    forAnyone: [JWKS_PATH, ...DISCOVERY_PATHS],
    listWebOrigins: () => store.clients.listWebOrigins(),
    clock,
  });
  await app.register(async (oauth) => {
    await oauthRoutes(oauth, {
      clients,
      codes: authorizationCodes,
      passwordGrant,
      refreshGrant,
      revocation,
      introspection,
    });
    openIdRoutes(oauth, {
      issuer: config.issuer,
      signIn,
      signInSessions,
      idTokens,
      clients,
      accessTokens,
      store,
      cookies,
      factors: { sms, totp, webauthn },
      backupCodes,
      requireAccessToken,
      csrfKey,
      signInPage: pages['sign-in'],
      stylesheet: stylesheetName && `${config.issuer}/sign-in/assets/${stylesheetName}`,
    });
  });
  serviceDescriptionRoutes(app, { serviceName: config.serviceName });
  oauthMetadataRoutes(app, { issuer: config.issuer, keys });
  adminRoutes(app, { accounts, emails, invites, clients, keys, audit, removal, webhooks, requireAdmin });
  operationsRoutes(app, {
    checkReadiness: () => checkSchemaIsCurrent(deps.db),
    registry,
    requireMetricsToken: createRequireMetricsToken(config.metricsToken),
  });
  for (const name of PAGE_NAMES) pageRoutes(app, { name, page: pages[name], path: PAGE_PATHS[name] });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Stopped before the caller closes the database: claimed deliveries are recorded first.
  app.addHook('onClose', () => Promise.all([deliveryWorker.stop(), messageWorker.stop(), retentionWorker.stop()]));
  app.addHook('onClose', () => passwordReset.drain());
  await app.ready();
  deliveryWorker.start();
  messageWorker.start();
  retentionWorker.start();
  return app;
}
