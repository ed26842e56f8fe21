import type { Kysely } from 'kysely';
import * as authorizationCodes from './authorization-codes.js';
import * as backupCodes from './backup-codes.js';
import * as clients from './clients.js';
import type { Database, Executor } from './database.js';
import * as emails from './emails.js';
import * as interactions from './interactions.js';
import * as invites from './invites.js';
import * as factors from './mfa-factors.js';
import * as mfaTokens from './mfa-tokens.js';
import * as codes from './one-time-codes.js';
import * as operatorViews from './operator-views.js';
import * as outbox from './outbox-messages.js';
import * as passkeySignIns from './passkey-sign-in-challenges.js';
import * as passwordResets from './password-resets.js';
import * as recoveryRequests from './recovery-requests.js';
import * as refreshTokens from './refresh-tokens.js';
import * as rememberedDevices from './remembered-devices.js';
import * as revokedTokens from './revoked-tokens.js';
import * as scheduledJobs from './scheduled-jobs.js';
import * as securityEvents from './security-events.js';
import * as secrets from './service-secrets.js';
import * as signInSessions from './sign-in-sessions.js';
import * as signingKeys from './signing-keys.js';
import * as smsCountryPauses from './sms-country-pauses.js';
import * as smsQuota from './sms-quota.js';
import * as throttle from './throttle.js';
import * as tokenStanding from './token-standing.js';
import * as users from './users.js';
import * as webauthnChallenges from './webauthn-challenges.js';
import * as webhooks from './webhooks.js';

type Repository = Record<string, (db: Executor, ...args: never[]) => unknown>;
type Bound<R extends Repository> = {
  [K in keyof R]: R[K] extends (db: Executor, ...args: infer A) => infer T ? (...args: A) => T : never;
};

function bind<R extends Repository>(repository: R, db: Executor): Bound<R> {
  const bound: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(repository)) {
    bound[name] = (...args: never[]) => fn(db, ...args);
  }
  return bound as Bound<R>;
}

/** The repositories bound to one executor; `transaction` runs a function on a store bound to a transaction. */
export interface Store {
  users: Bound<typeof users>;
  clients: Bound<typeof clients>;
  factors: Bound<typeof factors>;
  mfaTokens: Bound<typeof mfaTokens>;
  codes: Bound<typeof codes>;
  emails: Bound<typeof emails>;
  smsQuota: Bound<typeof smsQuota>;
  smsCountryPauses: Bound<typeof smsCountryPauses>;
  refreshTokens: Bound<typeof refreshTokens>;
  revokedTokens: Bound<typeof revokedTokens>;
  tokenStanding: Bound<typeof tokenStanding>;
  signingKeys: Bound<typeof signingKeys>;
  secrets: Bound<typeof secrets>;
  backupCodes: Bound<typeof backupCodes>;
  throttle: Bound<typeof throttle>;
  securityEvents: Bound<typeof securityEvents>;
  webauthnChallenges: Bound<typeof webauthnChallenges>;
  webhooks: Bound<typeof webhooks>;
  signInSessions: Bound<typeof signInSessions>;
  interactions: Bound<typeof interactions>;
  authorizationCodes: Bound<typeof authorizationCodes>;
  invites: Bound<typeof invites>;
  passkeySignIns: Bound<typeof passkeySignIns>;
  passwordResets: Bound<typeof passwordResets>;
  rememberedDevices: Bound<typeof rememberedDevices>;
  operatorViews: Bound<typeof operatorViews>;
  outbox: Bound<typeof outbox>;
  recoveryRequests: Bound<typeof recoveryRequests>;
  scheduledJobs: Bound<typeof scheduledJobs>;
  transaction<T>(work: (store: Store) => Promise<T>): Promise<T>;
}

export function createStore(db: Executor): Store {
  const store: Store = {
    users: bind(users, db),
    clients: bind(clients, db),
    factors: bind(factors, db),
    mfaTokens: bind(mfaTokens, db),
    codes: bind(codes, db),
    emails: bind(emails, db),
    smsQuota: bind(smsQuota, db),
    smsCountryPauses: bind(smsCountryPauses, db),
    refreshTokens: bind(refreshTokens, db),
    revokedTokens: bind(revokedTokens, db),
    tokenStanding: bind(tokenStanding, db),
    signingKeys: bind(signingKeys, db),
    secrets: bind(secrets, db),
    backupCodes: bind(backupCodes, db),
    throttle: bind(throttle, db),
    securityEvents: bind(securityEvents, db),
    webauthnChallenges: bind(webauthnChallenges, db),
    webhooks: bind(webhooks, db),
    signInSessions: bind(signInSessions, db),
    interactions: bind(interactions, db),
    authorizationCodes: bind(authorizationCodes, db),
    invites: bind(invites, db),
    passkeySignIns: bind(passkeySignIns, db),
    passwordResets: bind(passwordResets, db),
    rememberedDevices: bind(rememberedDevices, db),
    operatorViews: bind(operatorViews, db),
    outbox: bind(outbox, db),
    recoveryRequests: bind(recoveryRequests, db),
    scheduledJobs: bind(scheduledJobs, db),
    // Inside a transaction, nested work joins it.
    transaction: (work) =>
      db.isTransaction ? work(store) : (db as Kysely<Database>).transaction().execute((trx) => work(createStore(trx))),
  };
  return store;
}
