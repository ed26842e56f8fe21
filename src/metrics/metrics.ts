import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type SmsOutcome =
  | 'sent'
  | 'refused'
  | 'failed'
  | 'timeout'
  | 'suppressed_cooldown'
  | 'suppressed_cap'
  | 'suppressed_country'
  | 'suppressed_paused';
export type LoginOutcome = 'tokens' | 'mfa_required' | 'invalid_grant' | 'throttled';
/** A webhook attempt: `failed` is tried again, `gave_up` was the last try (24 hours on). */
export type WebhookOutcome = 'succeeded' | 'failed' | 'gave_up';
/** A mail or SMS of the outbox: `failed` is tried again; `refused` (the address), `unconfirmed` (silence once it may have gone) and `gave_up` are final. */
export type MessageOutcome = 'sent' | 'failed' | 'refused' | 'unconfirmed' | 'gave_up';
export type RecoveryStep = 'started' | 'cancelled' | 'completed';

/** The outbox as the metrics read it, at each scrape. */
export interface OutboxState {
  /** Deliveries not yet done (waiting, in flight or being retried). */
  depth: number;
  /** Age of the oldest of them; 0 when there is none. */
  oldestAgeSeconds: number;
}

/**
 * What the domains report; they see this interface, not prom-client. Labels never hold a user,
 * a number or a secret: purposes, outcomes, calling codes and amr values only.
 */
export interface ServiceMetrics {
  /** `provider` names who was asked (`twilio`, `vonage` …), `none` when no provider was (suppressed). */
  smsSent(
    purpose: string,
    countryCallingCode: string,
    outcome: SmsOutcome,
    provider: string,
    durationSeconds?: number,
  ): void;
  codeChecked(purpose: string, outcome: string, factorType: string): void;
  loginAnswered(outcome: LoginOutcome, amr?: readonly string[], factorType?: string): void;
  /** A sign-in that gave tokens or a code, by flow (`password`, `passkey`, `authorization_code`) and its amr. */
  signedIn(flow: 'password' | 'passkey' | 'authorization_code', amr: readonly string[]): void;
  requestServed(route: string, method: string, status: number, durationSeconds: number): void;
  webhookAttempted(outcome: WebhookOutcome): void;
  /** An attempt at a mail or SMS of the outbox, by channel, kind (`email_code`, `notice` …) and outcome. */
  messageAttempted(channel: string, kind: string, outcome: MessageOutcome): void;
  recoveryStep(step: RecoveryStep): void;
}

/** What the gauges read when scraped, from the database, so that every node reports the same shared state. */
export interface GaugeSources {
  countEnabledUsers: () => Promise<number>;
  readOutbox: () => Promise<OutboxState>;
  listPausedCountries: () => Promise<string[]>;
}

/** A registry of its own per app (tests run several apps in one process). */
export function createMetrics({ countEnabledUsers, readOutbox, listPausedCountries }: GaugeSources) {
  const registry = new Registry();
  const requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by route template, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const smsSent = new Counter({
    name: 'mfa_sms_sent_total',
    help: 'SMS send attempts by purpose, destination country calling code, outcome and provider',
    labelNames: ['purpose', 'country_calling_code', 'outcome', 'provider'],
    registers: [registry],
  });
  const smsDuration = new Histogram({
    name: 'mfa_sms_send_duration_seconds',
    help: 'Time the SMS provider took to accept or refuse a message, by provider',
    labelNames: ['provider'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [registry],
  });
  const codeChecks = new Counter({
    name: 'mfa_code_checks_total',
    help: 'Second-factor code checks by purpose, factor type and outcome (ok, wrong, expired, dead, spent, none)',
    labelNames: ['purpose', 'factor_type', 'outcome'],
    registers: [registry],
  });
  const logins = new Counter({
    name: 'mfa_logins_total',
    help: 'Password-grant answers by outcome, and the amr and second factor of successful logins',
    labelNames: ['outcome', 'amr', 'factor_type'],
    registers: [registry],
  });
  const signIns = new Counter({
    name: 'mfa_sign_ins_total',
    help: 'Successful sign-ins by flow (password grant, authorization code) and the methods proved (amr)',
    labelNames: ['flow', 'amr'],
    registers: [registry],
  });
  new Gauge({
    name: 'mfa_enabled_users',
    help: 'Users with multifactor authentication on',
    registers: [registry],
    async collect() {
      this.set(await countEnabledUsers());
    },
  });

  const webhookAttempts = new Counter({
    name: 'mfa_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, failed (to be retried), gave_up (failed, 24 hours on)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const messageAttempts = new Counter({
    name: 'mfa_outbox_messages_total',
    help: 'Attempts at mail and SMS of the outbox by channel, kind and outcome: sent, failed (to be retried), refused, unconfirmed and gave_up (final)',
    labelNames: ['channel', 'kind', 'outcome'],
    registers: [registry],
  });
  const recoverySteps = new Counter({
    name: 'mfa_recovery_requests_total',
    help: 'Recovery requests (every factor lost) by step: started, cancelled, completed',
    labelNames: ['step'],
    registers: [registry],
  });
  // One read of the outbox per scrape serves both gauges.
  let outboxRead: Promise<OutboxState> | undefined;
  const readOutboxOnce = () => {
    outboxRead ??= readOutbox().finally(() => {
      outboxRead = undefined;
    });
    return outboxRead;
  };
  new Gauge({
    name: 'mfa_webhook_outbox_depth',
    help: 'Webhook deliveries not yet done',
    registers: [registry],
    async collect() {
      this.set((await readOutboxOnce()).depth);
    },
  });
  new Gauge({
    name: 'mfa_webhook_oldest_undelivered_seconds',
    help: 'Age of the oldest webhook delivery not yet done; 0 when there is none',
    registers: [registry],
    async collect() {
      this.set((await readOutboxOnce()).oldestAgeSeconds);
    },
  });
  // Countries once paused stay in the series at 0, so that a resume shows as a fall, not a gap.
  const countriesSeenPaused = new Set<string>();
  new Gauge({
    name: 'mfa_sms_country_paused',
    help: 'Countries whose enrolment SMS are paused by the anomaly check (1), or were (0)',
    labelNames: ['country'],
    registers: [registry],
    async collect() {
      const paused = await listPausedCountries();
      for (const country of paused) countriesSeenPaused.add(country);
      for (const country of countriesSeenPaused) this.set({ country }, paused.includes(country) ? 1 : 0);
    },
  });

  const metrics: ServiceMetrics = {
    smsSent(purpose, countryCallingCode, outcome, provider, durationSeconds) {
      smsSent.inc({ purpose, country_calling_code: countryCallingCode, outcome, provider });
      if (durationSeconds !== undefined) smsDuration.observe({ provider }, durationSeconds);
    },
    codeChecked(purpose, outcome, factorType) {
      codeChecks.inc({ purpose, factor_type: factorType, outcome });
    },
    loginAnswered(outcome, amr, factorType) {
      logins.inc({ outcome, amr: amr?.join(' ') ?? '', factor_type: factorType ?? '' });
    },
    signedIn(flow, amr) {
      signIns.inc({ flow, amr: amr.join(' ') });
    },
    requestServed(route, method, status, durationSeconds) {
      requestDuration.observe({ route, method, status: String(status) }, durationSeconds);
    },
    webhookAttempted(outcome) {
      webhookAttempts.inc({ outcome });
    },
    messageAttempted(channel, kind, outcome) {
      messageAttempts.inc({ channel, kind, outcome });
    },
    recoveryStep(step) {
      recoverySteps.inc({ step });
    },
  };
  return { registry, metrics };
}
