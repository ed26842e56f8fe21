// `node --import tsx bench/seed.ts --users=1000000 --events=10000000 DATABASE_URL`: migrates the
// database and bulk-inserts a population, as a service in use for months would hold it, for the
// bench's scale mode (bench/scale.ts) or by hand. Minutes, not hours: rows are made in this
// process and written in large batches (SQLite: one prepared statement in a transaction per
// batch; PostgreSQL: one `INSERT … SELECT FROM unnest(arrays)` per batch).
import { randomBytes, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { driverHandleOf, openDatabase } from '../src/store/database.js';
import { migrateToLatest } from '../src/store/migrate.js';

/** How many of each the population holds. */
export interface Population {
  users: number;
  /** Audit rows, spread evenly over the last `eventDays` days (default 100: a tenth past 90 days' retention). */
  events: number;
  eventDays?: number;
  /** The stored hash every user gets (a PHC string): the bench's users all sign in with one password. */
  passwordHash: string;
}

/** `seed-0000042`: the username of user 42, so a bench can sign in as any of them. */
export const seedUsername = (index: number) => `seed-${String(index).padStart(8, '0')}`;

const BATCH_ROWS = 20_000;
const DAY_MS = 86_400_000;
/** The second factors in turn, for the third of users with MFA. */
const FACTOR_TYPES = ['sms', 'totp', 'webauthn'] as const;

type ColumnType = 'text' | 'integer' | 'bigint';
type Row = (string | number | null)[];
type Writer = (table: string, columns: [string, ColumnType][], rows: Row[]) => Promise<void>;

/**
 * Every third user (index % 3 = 0) has MFA: one verified factor (SMS, app and passkey in turn) and
 * ten backup codes. Every user has one live refresh token and every tenth a login-throttle row.
 * Secrets are random bytes of the right shape, never usable: the bench signs in with the users'
 * passwords only. Returns the rows written per table.
 */
export async function seedPopulation(databaseUrl: string, population: Population): Promise<Record<string, number>> {
  const { db } = await openDatabase(databaseUrl);
  await migrateToLatest(db);
  const handle = driverHandleOf(db);
  if (!handle) throw new Error('no driver');
  if (handle.dialect === 'sqlite') {
    // For the seeding only: random keys land all over each index, which a 2 MB page cache would
    // read back from disk batch after batch; and nothing needs surviving a crash here.
    handle.connection.pragma('cache_size = -524288');
    handle.connection.pragma('synchronous = OFF');
  }
  const write: Writer =
    handle.dialect === 'sqlite'
      ? async (table, columns, rows) => {
          const names = columns.map(([name]) => `"${name}"`).join(', ');
          const insert = handle.connection.prepare(
            `insert into "${table}" (${names}) values (${columns.map(() => '?').join(', ')})`,
          );
          handle.connection.transaction(() => {
            for (const row of rows) insert.run(row);
          })();
        }
      : async (table, columns, rows) => {
          const names = columns.map(([name]) => `"${name}"`).join(', ');
          const arrays = columns.map(([, type], index) => `$${index + 1}::${type}[]`).join(', ');
          await handle.pool.query(`insert into "${table}" (${names}) select * from unnest(${arrays})`, [
            ...columns.map((_, index) => rows.map((row) => row[index])),
          ]);
        };
  // The tables' secondary indexes are dropped for the load and built again after it: one sorted
  // build each instead of millions of inserts at random places (keys and constraints stay).
  const seeded = ['user', 'mfa_factor', 'backup_code', 'refresh_token', 'login_throttle', 'security_event'];
  const listed = seeded.map((table) => `'${table}'`).join(', ');
  const indexes: { name: string; definition: string }[] =
    handle.dialect === 'sqlite'
      ? (handle.connection
          .prepare(`select name, sql as definition from sqlite_master
            where type = 'index' and sql is not null and tbl_name in (${listed})`)
          .all() as { name: string; definition: string }[])
      : (
          await handle.pool.query(`select indexname as name, indexdef as definition from pg_indexes
            where schemaname = current_schema() and tablename in (${listed})
              and indexname not in (select conname from pg_constraint)`)
        ).rows;
  const run = async (statement: string) => {
    if (handle.dialect === 'sqlite') handle.connection.exec(statement);
    else await handle.pool.query(statement);
  };
  for (const index of indexes) await run(`drop index "${index.name}"`);
  const written: Record<string, number> = {};
  const count = (table: string, rows: number) => {
    written[table] = (written[table] ?? 0) + rows;
  };
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  const userIds: string[] = [];

  try {
    for (let start = 0; start < population.users; start += BATCH_ROWS) {
      const end = Math.min(start + BATCH_ROWS, population.users);
      const users: Row[] = [];
      const factors: Row[] = [];
      const backupCodes: Row[] = [];
      const refreshTokens: Row[] = [];
      const throttles: Row[] = [];
      for (let index = start; index < end; index += 1) {
        const id = randomUUID();
        userIds.push(id);
        const createdAt = iso(now - 200 * DAY_MS + index);
        const hasMfa = index % 3 === 0;
        const username = seedUsername(index);
        users.push([id, username, username, hasMfa ? createdAt : null, population.passwordHash, createdAt]);
        if (hasMfa) {
          const type = FACTOR_TYPES[(index / 3) % 3] ?? 'sms';
          factors.push([
            randomUUID(),
            id,
            type,
            type === 'sms' ? 'Phone' : type === 'totp' ? 'Authenticator app' : 'Passkey',
            1,
            'verified',
            createdAt,
            createdAt,
            type === 'sms' ? String(14_150_000_000 + index) : null,
            type === 'totp' ? `v1.${hex(48)}` : null,
            type === 'webauthn'
              ? JSON.stringify({
                  id: randomBytes(32).toString('base64url'),
                  publicKey: randomBytes(77).toString('base64url'),
                })
              : null,
            type === 'sms' ? null : 0,
          ]);
          for (let code = 0; code < 10; code += 1) backupCodes.push([randomUUID(), id, hex(32), null, createdAt]);
        }
        refreshTokens.push([
          randomUUID(),
          hex(32),
          randomUUID(),
          id,
          'seed',
          'openid',
          hasMfa ? '["pwd","otp"]' : '["pwd"]',
          hasMfa ? 'aal2' : 'aal1',
          Math.floor(now / 1000),
          iso(now + 30 * DAY_MS),
          iso(now),
        ]);
        if (index % 10 === 0) throttles.push([`user:${hex(32)}`, 1, iso(now - (index % 40) * 3_600_000), null, null]);
      }
      await write(
        'user',
        [
          ['id', 'text'],
          ['username', 'text'],
          ['username_key', 'text'],
          ['mfa_enabled_at', 'text'],
          ['password_hash', 'text'],
          ['created_at', 'text'],
        ],
        users,
      );
      await write(
        'mfa_factor',
        [
          ['id', 'text'],
          ['user_id', 'text'],
          ['type', 'text'],
          ['name', 'text'],
          ['is_default', 'integer'],
          ['status', 'text'],
          ['created_at', 'text'],
          ['verified_at', 'text'],
          ['phone_number', 'text'],
          ['sealed_secret', 'text'],
          ['data', 'text'],
          ['counter', 'bigint'],
        ],
        factors,
      );
      await write(
        'backup_code',
        [
          ['id', 'text'],
          ['user_id', 'text'],
          ['code_hash', 'text'],
          ['used_at', 'text'],
          ['created_at', 'text'],
        ],
        backupCodes,
      );
      await write(
        'refresh_token',
        [
          ['id', 'text'],
          ['token_hash', 'text'],
          ['family_id', 'text'],
          ['user_id', 'text'],
          ['client_id', 'text'],
          ['scope', 'text'],
          ['amr', 'text'],
          ['acr', 'text'],
          ['auth_time', 'bigint'],
          ['expires_at', 'text'],
          ['created_at', 'text'],
        ],
        refreshTokens,
      );
      await write(
        'login_throttle',
        [
          ['scope', 'text'],
          ['failures', 'integer'],
          ['last_failure_at', 'text'],
          ['blocked_until', 'text'],
          ['noted_block_until', 'text'],
        ],
        throttles,
      );
      count('user', users.length);
      count('mfa_factor', factors.length);
      count('backup_code', backupCodes.length);
      count('refresh_token', refreshTokens.length);
      count('login_throttle', throttles.length);
    }
    // The count /metrics reads (kept by the writes that turn MFA on and off).
    await db
      .updateTable('user_count')
      .set((eb) => ({ value: eb('value', '+', written.mfa_factor ?? 0) }))
      .where('name', '=', 'mfa_enabled')
      .execute();

    const spanMs = (population.eventDays ?? 100) * DAY_MS;
    // The outcomes the service writes for a login (password-grant.ts, hosted-sign-in.ts).
    const outcomes = ['succeeded', 'succeeded', 'succeeded', 'failed', 'mfa_required'];
    for (let start = 0; start < population.events; start += BATCH_ROWS) {
      const end = Math.min(start + BATCH_ROWS, population.events);
      const events: Row[] = [];
      for (let index = start; index < end; index += 1) {
        events.push([
          randomUUID(),
          // Oldest first, as they were written.
          iso(now - spanMs + Math.floor((index / population.events) * spanMs)),
          userIds.length > 0 ? (userIds[(index * 7919) % userIds.length] ?? null) : null,
          `198.51.100.${index % 250}`,
          'login',
          outcomes[index % outcomes.length] ?? 'success',
          JSON.stringify({ client_id: 'seed' }),
        ]);
      }
      await write(
        'security_event',
        [
          ['id', 'text'],
          ['occurred_at', 'text'],
          ['user_id', 'text'],
          ['client_address', 'text'],
          ['type', 'text'],
          ['outcome', 'text'],
          ['detail', 'text'],
        ],
        events,
      );
      count('security_event', events.length);
    }
    for (const index of indexes) await run(index.definition);
    await run('analyze');
    return written;
  } finally {
    await db.destroy();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { hash } = await import('@node-rs/argon2');
  const { passwordHashParameters } = await import('../src/crypto/passwords.js');
  const argv = process.argv.join(' ');
  const databaseUrl = process.argv.slice(2).find((arg) => !arg.startsWith('--'));
  if (!databaseUrl) {
    console.error(
      'usage: node --import tsx bench/seed.ts [--users=N] [--events=M] [--password=…] DATABASE_URL (sqlite:path or postgres://…)',
    );
    process.exit(2);
  }
  const users = Number(/--users=(\d+)/.exec(argv)?.[1] ?? 1000);
  const events = Number(/--events=(\d+)/.exec(argv)?.[1] ?? users * 10);
  const password = /--password=(\S+)/.exec(argv)?.[1] ?? 'correct horse battery';
  const started = performance.now();
  const written = await seedPopulation(databaseUrl, {
    users,
    events,
    passwordHash: await hash(password, passwordHashParameters),
  });
  console.log(`seeded in ${Math.round((performance.now() - started) / 1000)} s:`, written);
}
