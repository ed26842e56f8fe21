import { randomToken } from '../crypto/secrets.js';
import type { Executor } from './database.js';

/** The stored secret `name`; the first caller's `candidate` wins when several nodes race to create it. */
export async function findOrCreateSecret(db: Executor, name: string, candidate: string, now: Date): Promise<string> {
  await db
    .insertInto('service_secret')
    .values({ name, value: candidate, created_at: now.toISOString() })
    .onConflict((conflict) => conflict.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('service_secret').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

/**
 * What every keyed hash and sealing key of the service derives from: SECRET_KEY when it is set,
 * else a random key kept in the database, made by the first node or command that asks.
 */
export async function findServiceSecret(db: Executor, secretKey: string | undefined, now: Date): Promise<string> {
  return secretKey ?? findOrCreateSecret(db, 'code-hash-key', randomToken(32), now);
}
