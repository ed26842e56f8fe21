import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  type ControlledTransaction,
  type Dialect,
  type DialectAdapter,
  type Generated,
  Kysely,
  type MigrationLockOptions,
  PostgresAdapter,
  type SelectQueryBuilder,
  SqliteAdapter,
  SqliteDialect,
  sql,
  type Transaction,
} from 'kysely';
import type { Pool, PoolClient } from 'pg';
import { tracedDialect } from './traced-dialect.js';

/** Times are ISO-8601 UTC strings (`Date#toISOString`) in both dialects: they sort as they compare. */
type IsoTime = string;

export interface UserTable {
  id: string;
  /** As given at creation. */
  username: string;
  /** The username folded to lower case: unique, so `alice` and `Alice` are one account. */
  username_key: string;
  /** When MFA was last turned on (its first factor verified); null while it is off. */
  mfa_enabled_at: IsoTime | null;
  /** How many times every login of the user was ended; a login begun before the last may not start a family. */
  session_generation: Generated<number>;
  password_hash: string;
  created_at: IsoTime;
  /** 1 for an operator (CONTRACT §21): their access token may call the admin API. */
  is_operator: Generated<number>;
  /** CONTRACT §20: the user's address, null when none. */
  email: string | null;
  /** When the address was proved (a code came back) or given by an operator; null while it is not. */
  email_verified_at: IsoTime | null;
  /** When the owner was last told that sign-ins were throttled (at most once a day); null before. */
  throttle_noticed_at: IsoTime | null;
  /** CONTRACT §22: the language the user chose for the service's texts (ISO 639-1); null: the browser's. */
  language: string | null;
}

export interface OAuthClientTable {
  id: string;
  name: string;
  secret_hash: string;
  created_at: IsoTime;
  /** How the client is told a second factor is needed: the seed's 200 answer, or RFC 6749's 403 error. */
  mfa_challenge: 'seed' | 'error';
  /** JSON array of the exact URIs an authorization code may be sent to. */
  redirect_uris: Generated<string>;
  /** JSON array of the exact URIs RP-initiated logout may return to. */
  post_logout_redirect_uris: Generated<string>;
  /** `client_secret_basic`, `client_secret_post`, or `none` (a public client, whose secret_hash is ''). */
  token_endpoint_auth_method: Generated<string>;
  /** Space-separated scopes the client may be granted. */
  allowed_scopes: Generated<string>;
  /** JSON array of origins whose browsers may call the token, userinfo and revocation endpoints. */
  web_origins: Generated<string>;
  id_token_signed_response_alg: Generated<string>;
  /** `optional` or `required`: a user without a second factor adds one while signing in. */
  mfa_policy: Generated<string>;
  /** CONTRACT §19: days a browser may skip the second step after the person chose so (0: never). */
  remember_device_days: Generated<number>;
}

/**
 * A browser's sign-in at the hosted page (the OpenID Provider's session): the cookie holds a secret
 * whose hash is here. It is over when ended, expired, idle too long, or when the user's
 * session_generation has moved on (every login of the user ended: CONTRACT §14).
 */
export interface SignInSessionTable {
  id: string;
  secret_hash: string;
  user_id: string;
  /** JSON array of the methods the sign-in proved, e.g. ["pwd","otp"]. */
  amr: string;
  /** What the sign-in reached (CONTRACT §14): kept, not derived, as a remembered device reaches aal2 only. */
  acr: string;
  auth_time: number;
  session_generation: number;
  created_at: IsoTime;
  last_used_at: IsoTime;
  expires_at: IsoTime;
  ended_at: IsoTime | null;
}

/**
 * A sign-in in progress at the hosted page, between the authorization request and the redirect.
 * Bound to the browser that started it (a cookie whose hash is `browser_hash`); `request` is the
 * checked authorization request as JSON. Once the password is right it holds the user and what
 * the sign-in has proved so far.
 */
export interface AuthorizationInteractionTable {
  id: string;
  browser_hash: string;
  csrf_hash: string;
  client_id: string;
  request: string;
  user_id: string | null;
  auth_time: number | null;
  amr: string | null;
  acr: string | null;
  session_generation: number | null;
  /** The login (refresh-token family) the finished sign-in's tokens will belong to. */
  login_id: string;
  created_at: IsoTime;
  expires_at: IsoTime;
  finished_at: IsoTime | null;
  /** The browser's sign-in session its proof came from: the sign-in ends with it. */
  sign_in_session_id: string | null;
}

/**
 * CONTRACT §19: a browser that skips the second step at the hosted sign-in. The cookie holds a token
 * whose hash is here; it counts only for its user, until it expires or the user's session
 * generation moves on (CONTRACT §14's changes forget every device).
 */
export interface RememberedDeviceTable {
  id: string;
  token_hash: string;
  user_id: string;
  session_generation: number;
  /** JSON array of the methods of the sign-in that remembered it, e.g. ["pwd","otp"]. */
  amr: string;
  /** The browser and system, as its User-Agent named them, e.g. "Chrome on Linux". */
  browser: string;
  created_at: IsoTime;
  last_used_at: IsoTime;
  expires_at: IsoTime;
}

/** CONTRACT §19: a one-time link that lets its holder make an account's first passkey. */
export interface InviteTable {
  token_hash: string;
  user_id: string;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/** A used challenge of a passkey sign-in without a username (the challenges are signed, not stored). */
export interface PasskeySignInChallengeTable {
  challenge_hash: string;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/** RFC 6749 §4.1.2: a code, stored hashed, single use, bound to its client, redirect URI and PKCE challenge. */
export interface AuthorizationCodeTable {
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  /** RFC 7636 S256 challenge. */
  code_challenge: string;
  scope: string;
  nonce: string | null;
  amr: string;
  acr: string;
  auth_time: number;
  sign_in_session_id: string;
  /** The refresh-token family its tokens start: a replay of the code revokes it. */
  login_id: string;
  session_generation: number;
  created_at: IsoTime;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  replayed_at: IsoTime | null;
}

/** CONTRACT §14: a password login waiting for its second factor, for clients that take the 403 challenge. */
export interface MfaTokenTable {
  /** SHA-256 of the opaque token; the token itself is never stored. */
  token_hash: string;
  user_id: string;
  client_id: string;
  /** The acr the finished login must reach (aal2 or phr). */
  required_acr: string;
  scope: string;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

export type FactorStatus = 'pending' | 'verified';

/**
 * Every second factor of every user, one row each: SMS, authenticator apps (TOTP), passkeys.
 * A pending row is an enrolment not yet proved. The columns after `last_used_at` are the type's.
 */
export interface MfaFactorTable {
  id: string;
  user_id: string;
  /** A FactorType: 'sms', 'totp', 'webauthn'. */
  type: string;
  name: string;
  /** 0 or 1; at most one verified factor per user has 1. */
  is_default: number;
  status: FactorStatus;
  created_at: IsoTime;
  verified_at: IsoTime | null;
  last_used_at: IsoTime | null;
  /** SMS: the number, digits only. */
  phone_number: string | null;
  /** A secret of the type (the TOTP key), sealed with crypto/sealing.ts. */
  sealed_secret: string | null;
  /** Non-secret facts of the type, as JSON (a passkey's credential id and public key). */
  data: string | null;
  /** A number that only goes up: the last TOTP step accepted, a passkey's signature counter. */
  counter: number | null;
  /** Codes tried against a pending enrolment (CONTRACT §14: it dies after 5 wrong ones). */
  failed_attempts: Generated<number>;
}

/** SMS codes' purposes (the seed's), and email codes' (CONTRACT §20: one code per user and purpose). */
export type SmsPurpose = 'enrol' | 'login';
export type EmailPurpose = 'email_enrol' | 'email_login';
export type CodePurpose = SmsPurpose | EmailPurpose;

export function isEmailPurpose(purpose: CodePurpose): purpose is EmailPurpose {
  return purpose.startsWith('email_');
}

/** At most one code per user and purpose: a new one replaces the row (and its id). */
export interface OneTimeCodeTable {
  id: string;
  user_id: string;
  purpose: CodePurpose;
  /** Where the code went: the SMS number's digits, or (email codes) the address. */
  phone_number: string;
  code_hash: string;
  attempts: number;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
  /** The cooldown slot its SMS took (`sms_cooldown.reservation_id`). */
  reservation_id: string | null;
}

/** The last SMS sent per user and purpose, for the resend cooldown. */
export interface SmsCooldownTable {
  user_id: string;
  purpose: CodePurpose;
  sent_at: IsoTime;
  reservation_id: string;
}

/**
 * SMS sent per scope in one clock hour: a user, a destination number's or range's keyed hash, a
 * country (`country:US`, kept 7 days for the anomaly pause), the enrolment and global ceilings.
 */
export interface SmsCounterTable {
  scope: string;
  window_start: IsoTime;
  sends: number;
}

/** A country's latest anomaly pause of its enrolment SMS: on while `paused_until` is ahead and no operator resumed it. */
export interface SmsCountryPauseTable {
  country: string;
  paused_at: IsoTime;
  paused_until: IsoTime;
  resumed_at: IsoTime | null;
  /** What tripped it: the sends of that hour, and the threshold they were about to pass. */
  sends: number;
  threshold: number;
}

export interface RefreshTokenTable {
  id: string;
  token_hash: string;
  family_id: string;
  user_id: string;
  client_id: string;
  scope: string;
  /** JSON array of the login's authentication methods, e.g. ["pwd","sms"]. */
  amr: string;
  acr: string;
  auth_time: number;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  revoked_at: IsoTime | null;
  created_at: IsoTime;
  /** The browser sign-in session the login came through (the code flow), kept by rotation. */
  sign_in_session_id: string | null;
}

export interface SigningKeyTable {
  kid: string;
  alg: string;
  public_jwk: string;
  /** The private JWK as JSON, or sealed with SECRET_KEY (`sealed:` prefix). */
  private_jwk: string;
  created_at: IsoTime;
}

/** A WebAuthn challenge per user and purpose (register, login): random, single use, 5 minutes. */
export interface WebauthnChallengeTable {
  user_id: string;
  purpose: 'register' | 'login';
  /** SHA-256 of the challenge the browser signs. */
  challenge_hash: string;
  /** The name asked for with a registration. */
  pending_name: string | null;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/** Revoked access tokens (by jti) and revoked logins (by sid), kept until their tokens expire. */
export interface RevokedTokenTable {
  id: string;
  expires_at: IsoTime;
}

/** Backup codes, as keyed hashes; `used_at` set once spent. */
export interface BackupCodeTable {
  id: string;
  user_id: string;
  code_hash: string;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/**
 * Attempts that may fail, per scope (a username's or an address's keyed hash, a user's second
 * factor), and the block they earned. Each attempt is counted before it is judged.
 */
export interface LoginThrottleTable {
  scope: string;
  failures: number;
  last_failure_at: IsoTime;
  blocked_until: IsoTime | null;
  /** The block whose first refusal was recorded in the audit trail. */
  noted_block_until: IsoTime | null;
  /** Attempts counted and not yet settled right or wrong (counted in `failures` meanwhile). */
  in_flight: Generated<number>;
  /** When the newest of them was counted: older ones are taken for abandoned. */
  in_flight_at: IsoTime | null;
}

/** The audit trail: what happened, to whom, from where, with what outcome; never a secret. */
export interface SecurityEventTable {
  id: string;
  occurred_at: IsoTime;
  user_id: string | null;
  client_address: string | null;
  type: string;
  outcome: string;
  /** JSON object of non-secret facts. */
  detail: string | null;
}

/** Secrets the service makes for itself when SECRET_KEY is not set. */
export interface ServiceSecretTable {
  name: string;
  value: string;
  created_at: IsoTime;
}

/** Where security events are sent (CONTRACT §16); the signing secret sealed with crypto/sealing.ts. */
export interface WebhookEndpointTable {
  id: string;
  url: string;
  /** JSON array of the event types it receives. */
  events: string;
  sealed_secret: string;
  created_at: IsoTime;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * The outbox: one event for one endpoint, written in the transaction of the change it reports.
 * Its id is the `webhook-id` of every attempt. While a worker holds it, `lease_id` names the claim
 * and `due_at` is when the claim lapses (a worker that died loses it then).
 */
export interface WebhookDeliveryTable {
  id: string;
  endpoint_id: string;
  event_type: string;
  /** The body sent, exactly: every attempt sends the same bytes. */
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  due_at: IsoTime;
  lease_id: string | null;
  created_at: IsoTime;
}

/** One try at a delivery: `pending` while in flight. */
export interface WebhookAttemptTable {
  id: string;
  delivery_id: string;
  attempt: number;
  status: WebhookDeliveryStatus;
  response_status: number | null;
  attempted_at: IsoTime;
}

export type OutboxChannel = 'email' | 'sms';
export type OutboxMessageStatus = 'pending' | 'sent' | 'failed';

/**
 * CONTRACT §16/§20: a mail or SMS to send, written in the transaction of the change that causes it.
 * `sealed_message` holds the address and the text, sealed (a code may be in it), and is blanked
 * once the message is sent or given up. While a worker holds it, `lease_id` names the claim and
 * `due_at` is when the claim lapses.
 */
export interface OutboxMessageTable {
  id: string;
  channel: OutboxChannel;
  /** What it is (`email_code`, `notice.factor_added`, `recovery_sms` …): for logs and metrics. */
  kind: string;
  user_id: string | null;
  sealed_message: string;
  status: OutboxMessageStatus;
  attempts: Generated<number>;
  due_at: IsoTime;
  lease_id: string | null;
  /** Why the last attempt failed (an error code, never the message). */
  last_error: string | null;
  created_at: IsoTime;
  finished_at: IsoTime | null;
  /** When it is of no more use (an email code's mail: the code's expiry): given up then; null for 24 hours. */
  expires_at: IsoTime | null;
}

export type RecoveryState = 'waiting' | 'cancelled' | 'completed';

/** CONTRACT §20: a user's recovery request, the latest one. */
export interface RecoveryRequestTable {
  user_id: string;
  id: string;
  state: RecoveryState;
  ready_at: IsoTime;
  created_at: IsoTime;
  ended_at: IsoTime | null;
}

/** CONTRACT §20: the code mailed to an address the user asked for, one per user, stored keyed-hashed. */
export interface EmailCodeTable {
  user_id: string;
  /** New with each code: the key its hash is made under. */
  id: string;
  email: string;
  code_hash: string;
  attempts: Generated<number>;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/** CONTRACT §20: the user's one password-reset link, by its keyed hash; spent once. */
export interface PasswordResetTable {
  user_id: string;
  token_hash: string;
  /** The verified address the link was mailed to. */
  email: string;
  expires_at: IsoTime;
  used_at: IsoTime | null;
  created_at: IsoTime;
}

/** Counts kept in the writes that change them, so that reading one costs one row (issue 33). */
export interface UserCountTable {
  /** `mfa_enabled`: users with MFA on. */
  name: string;
  value: number;
}

/** When each node-shared periodic job is next due; the node that moves `due_at` on runs it (issue 33). */
export interface ScheduledJobTable {
  name: string;
  due_at: IsoTime;
}

/** Login events counted per clock hour that has settled (store/operator-views.ts); the hour is its start, ISO 8601. */
export interface SignInHourTable {
  hour: IsoTime;
  /** Every login event of the hour, whatever its outcome: an hour is shown when it had one. */
  logins: number;
  succeeded: number;
  refused: number;
  throttled: number;
}

export interface Database {
  user: UserTable;
  user_count: UserCountTable;
  oauth_client: OAuthClientTable;
  sign_in_session: SignInSessionTable;
  authorization_interaction: AuthorizationInteractionTable;
  authorization_code: AuthorizationCodeTable;
  invite: InviteTable;
  remembered_device: RememberedDeviceTable;
  passkey_sign_in_challenge: PasskeySignInChallengeTable;
  mfa_token: MfaTokenTable;
  webauthn_challenge: WebauthnChallengeTable;
  mfa_factor: MfaFactorTable;
  one_time_code: OneTimeCodeTable;
  email_code: EmailCodeTable;
  password_reset: PasswordResetTable;
  sms_cooldown: SmsCooldownTable;
  sms_counter: SmsCounterTable;
  sms_country_pause: SmsCountryPauseTable;
  refresh_token: RefreshTokenTable;
  signing_key: SigningKeyTable;
  revoked_token: RevokedTokenTable;
  backup_code: BackupCodeTable;
  login_throttle: LoginThrottleTable;
  security_event: SecurityEventTable;
  service_secret: ServiceSecretTable;
  webhook_endpoint: WebhookEndpointTable;
  webhook_delivery: WebhookDeliveryTable;
  webhook_attempt: WebhookAttemptTable;
  outbox_message: OutboxMessageTable;
  recovery_request: RecoveryRequestTable;
  scheduled_job: ScheduledJobTable;
  sign_in_hour: SignInHourTable;
}

/** What repository functions run on: the database itself or a transaction. */
export type Executor = Kysely<Database> | Transaction<Database> | ControlledTransaction<Database>;

export type DatabaseDialect = 'sqlite' | 'postgres';

/**
 * On PostgreSQL, the rows the query picks for a write skip those another transaction holds
 * instead of waiting for them: two nodes working through one table take different rows, and a
 * clean-up cannot lock rows in an order that closes a cycle with a request's. (SQLite has one
 * writer at a time and no row locks.)
 */
export function skipLockedOnPostgres<DB, TB extends keyof DB, O>(
  db: Executor,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return db.getExecutor().adapter instanceof PostgresAdapter ? query.forUpdate().skipLocked() : query;
}

export interface OpenDatabase {
  db: Kysely<Database>;
  dialect: DatabaseDialect;
}

export interface PoolSettings {
  /** Most connections one node opens to PostgreSQL. */
  max: number;
  /** How long a request waits for a connection before it fails (and answers 503). */
  connectionTimeoutMs: number;
}

const DEFAULT_POOL: PoolSettings = { max: 10, connectionTimeoutMs: 5_000 };

/** Opens the database named by a `DATABASE_URL` (`sqlite:<path>` or `postgres://…`). */
export async function openDatabase(
  url: string,
  pool: PoolSettings = DEFAULT_POOL,
  { traced = false }: { traced?: boolean } = {},
): Promise<OpenDatabase> {
  const maybeTraced = (dialect: Dialect, system: 'sqlite' | 'postgresql') =>
    traced ? tracedDialect(dialect, system) : dialect;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const connection = new SQLite(path);
    connection.pragma('journal_mode = WAL');
    // Another process holding the write lock makes us wait instead of failing at once.
    connection.pragma('busy_timeout = 5000');
    connection.pragma('synchronous = NORMAL');
    connection.pragma('foreign_keys = ON');
    // SQLite's own default page cache (2 MB). better-sqlite3 builds SQLite with 16 MB, which a
    // database larger than that fills under load and keeps: 14 MB more resident memory for pages
    // the operating system's file cache holds anyway (docs/PERFORMANCE.md).
    connection.pragma('cache_size = -2000');
    const db = new Kysely<Database>({
      dialect: maybeTraced(new LockingSqliteDialect({ database: withStatementCache(connection) }), 'sqlite'),
    });
    driverHandles.set(db, { dialect: 'sqlite', connection });
    return { db, dialect: 'sqlite' };
  }
  const { default: pg } = await import('pg');
  const { PostgresDialect } = await import('kysely');
  // int8 (bigint) as a number: our bigints are epoch seconds, far below 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, Number);
  const pgPool = new pg.Pool({
    connectionString: url,
    max: pool.max,
    connectionTimeoutMillis: pool.connectionTimeoutMs,
    idleTimeoutMillis: 30_000,
  });
  // A connection dropped by a restarting server emits 'error'; unheard, it would end the process.
  // Idle ones report through the pool, checked-out ones through the client itself; either way the
  // query in flight fails (answered 503) and the pool opens a new connection when next asked.
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => {
    client.on('error', () => {});
    prepareOncePerConnection(client);
  });
  const db = new Kysely<Database>({ dialect: maybeTraced(new PostgresDialect({ pool: pgPool }), 'postgresql') });
  driverHandles.set(db, { dialect: 'postgres', pool: pgPool });
  return { db, dialect: 'postgres' };
}

/**
 * The driver under a database opened by `openDatabase`: for the store's hand-written hot reads
 * (store/token-standing.ts), which skip Kysely's query building. Everything else goes through Kysely.
 */
export type DriverHandle = { dialect: 'sqlite'; connection: SQLite.Database } | { dialect: 'postgres'; pool: Pool };

const driverHandles = new WeakMap<Executor, DriverHandle>();

/** The driver under `db`; undefined for a transaction or a database not opened by `openDatabase`. */
export function driverHandleOf(db: Executor): DriverHandle | undefined {
  return driverHandles.get(db);
}

/** Enough for every statement the code builds; texts beyond it (a long `in` list, say) go unnamed. */
const MAX_NAMED_STATEMENTS = 500;
/** A text's statement name, or null for a text that is always sent unnamed. */
const statementNames = new Map<string, string | null>();
/** PostgreSQL's "cached plan must not change result type". */
const PLAN_RESULT_CHANGED = '0A000';

/**
 * node-postgres sends a query unnamed, and PostgreSQL parses and plans it again each time. Kysely
 * builds our statements from code, a bounded set of texts, so each text is given a name the first
 * time it is sent, and a connection prepares a named statement once: the server spent a third less
 * CPU per login (docs/PERFORMANCE.md). Left unnamed: statements without parameters (transaction
 * control, migrations), and a text holding `*`, since a prepared `select *` fails once a migration
 * adds a column, as a rolling upgrade does under nodes still running. A migration that changes the
 * type of a column a statement returns fails that statement once on this node; its text is then
 * sent unnamed on every connection.
 */
function prepareOncePerConnection(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((text: unknown, values?: unknown, callback?: unknown) => {
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || text.includes('*')) {
      return query(text, values, callback);
    }
    let name = statementNames.get(text);
    if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS) {
      name = `kysely_${statementNames.size}`;
      statementNames.set(text, name);
    }
    if (!name) return query(text, values, callback);
    const noteFailure = (error: unknown) => {
      if ((error as { code?: unknown } | undefined)?.code === PLAN_RESULT_CHANGED) statementNames.set(text, null);
    };
    if (typeof callback === 'function') {
      return query({ name, text, values }, (error: unknown, result: unknown) => {
        noteFailure(error);
        callback(error, result);
      });
    }
    return (query({ name, text, values }) as Promise<unknown>).catch((error: unknown) => {
      noteFailure(error);
      throw error;
    });
  }) as PoolClient['query'];
}

/** Network errors and PostgreSQL's "cannot connect / shutting down" classes (08, 57P). */
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/** True when the error says the database cannot be reached now, rather than that a query is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // PostgreSQL's classes 08 (connection), 53 (insufficient resources: too many connections, no
  // memory or disk) and 57P (shutting down): the database cannot serve now, whatever the request.
  if (
    typeof code === 'string' &&
    (UNAVAILABLE_ERRNOS.has(code) || code.startsWith('08') || code.startsWith('53') || code.startsWith('57P'))
  ) {
    return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|SQLITE_BUSY/.test(error.message);
}

/**
 * Kysely's SQLite driver prepares every query anew; preparing costs more than running our small
 * queries, so statements are kept by their SQL text (a bounded set: Kysely builds them from code).
 */
function withStatementCache(connection: SQLite.Database): SQLite.Database {
  const statements = new Map<string, SQLite.Statement>();
  return new Proxy(connection, {
    get(target, property) {
      if (property !== 'prepare') return Reflect.get(target, property, target);
      return (sql: string) => {
        let statement = statements.get(sql);
        if (!statement) {
          if (statements.size >= 1000) statements.clear();
          statement = target.prepare(sql);
          statements.set(sql, statement);
        }
        return statement;
      };
    },
  });
}

/**
 * Kysely's SQLite adapter takes no migration lock, trusting that one process owns the file.
 * Several nodes may start together on one file, so the migrator holds SQLite's write lock
 * (BEGIN IMMEDIATE) from reading the migration table to its last migration.
 */
class LockingSqliteDialect extends SqliteDialect {
  override createAdapter(): DialectAdapter {
    return new LockingSqliteAdapter();
  }
}

class LockingSqliteAdapter extends SqliteAdapter {
  #holdsLock = false;

  override async acquireMigrationLock(db: Kysely<any>, _options: MigrationLockOptions): Promise<void> {
    await sql`begin immediate`.execute(db);
    this.#holdsLock = true;
  }

  // Kysely releases after a failed acquire too: a commit then would replace "database is locked"
  // with "no transaction is active".
  override async releaseMigrationLock(db: Kysely<any>, _options: MigrationLockOptions): Promise<void> {
    if (!this.#holdsLock) return;
    this.#holdsLock = false;
    await sql`commit`.execute(db);
  }
}
