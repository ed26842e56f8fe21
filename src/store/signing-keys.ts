import type { Executor } from './database.js';

export interface StoredSigningKey {
  kid: string;
  alg: string;
  publicJwk: string;
  privateJwk: string;
  createdAt: Date;
}

/** Inserts the key unless its kid exists. */
export async function insertSigningKey(db: Executor, key: StoredSigningKey): Promise<void> {
  await db
    .insertInto('signing_key')
    .values({
      kid: key.kid,
      alg: key.alg,
      public_jwk: key.publicJwk,
      private_jwk: key.privateJwk,
      created_at: key.createdAt.toISOString(),
    })
    .onConflict((conflict) => conflict.column('kid').doNothing())
    .execute();
}

/** The newest key of `alg` (ties broken by kid, so every node picks the same one), or undefined. */
export async function findNewestSigningKey(db: Executor, alg: string): Promise<StoredSigningKey | undefined> {
  const row = await db
    .selectFrom('signing_key')
    .selectAll()
    .where('alg', '=', alg)
    .orderBy('created_at', 'desc')
    .orderBy('kid', 'desc')
    .executeTakeFirst();
  return row && toRecord(row);
}

/** The key with this kid, or undefined. */
export async function findSigningKey(db: Executor, kid: string): Promise<StoredSigningKey | undefined> {
  const row = await db.selectFrom('signing_key').selectAll().where('kid', '=', kid).executeTakeFirst();
  return row && toRecord(row);
}

function toRecord(row: { kid: string; alg: string; public_jwk: string; private_jwk: string; created_at: string }) {
  return {
    kid: row.kid,
    alg: row.alg,
    publicJwk: row.public_jwk,
    privateJwk: row.private_jwk,
    createdAt: new Date(row.created_at),
  };
}

/** Every key, oldest first. */
export async function listSigningKeys(db: Executor): Promise<StoredSigningKey[]> {
  const rows = await db
    .selectFrom('signing_key')
    .selectAll()
    .orderBy('created_at', 'asc')
    .orderBy('kid', 'asc')
    .execute();
  return rows.map(toRecord);
}
