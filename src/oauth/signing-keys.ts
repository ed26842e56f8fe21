import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import type { Clock } from '../clock.js';
import { seal, UnsealError, unseal } from '../crypto/sealing.js';
import { deriveKey } from '../crypto/secrets.js';
import type { StoredSigningKey } from '../store/signing-keys.js';
import type { Store } from '../store/store.js';

export const SIGNING_ALG = 'EdDSA';
/** How long a node keeps signing with the key it knows before looking for a newer one. */
const ACTIVE_KEY_CACHE_MS = 10_000;

type Key = Awaited<ReturnType<typeof importJWK>>;

export interface SigningKeysDeps {
  store: Store;
  clock: Clock;
  secretKey?: string;
  /** Tokens live this long, so a superseded key stays published this long after its successor appears. */
  accessTokenTtlSeconds: number;
}

/**
 * The signing keys, kept in the database so that every node signs and verifies alike. Private
 * keys are sealed with AES-256-GCM under a key derived from SECRET_KEY when it is set. Creating
 * the service makes the first key if there is none; it throws when a stored key is sealed and
 * SECRET_KEY is missing or different.
 */
export async function createSigningKeys({ store, clock, secretKey, accessTokenTtlSeconds }: SigningKeysDeps) {
  const sealingKey = secretKey === undefined ? undefined : deriveKey(secretKey, 'signing-key-encryption');
  const publicKeys = new Map<string, Key>();
  let active: { kid: string; privateKey: Key; checkedAt: number } | undefined;

  /** The newest key, for signing; looked up again at most every 10 s so rotations reach every node. */
  async function activeKey(): Promise<{ kid: string; privateKey: Key }> {
    const now = clock.now().getTime();
    if (active && now - active.checkedAt < ACTIVE_KEY_CACHE_MS) return active;
    let newest = await store.signingKeys.findNewestSigningKey();
    if (!newest) {
      await storeFirstKey();
      newest = await store.signingKeys.findNewestSigningKey();
      if (!newest) throw new Error('no signing key could be stored');
    }
    if (active?.kid !== newest.kid) {
      const privateJwk = JSON.parse(openPrivateKey(newest.privateJwk, sealingKey)) as JWK;
      active = { kid: newest.kid, privateKey: await importJWK(privateJwk, SIGNING_ALG), checkedAt: now };
    }
    active.checkedAt = now;
    return active;
  }

  /**
   * Nodes starting together on an empty database race to make the first key. The first candidate
   * stored under one name wins (a primary key settles it), and every node inserts that same key,
   * which its kid lets in once: one key, whoever finishes first. The record holds the private key
   * exactly as the signing_key table does (sealed when SECRET_KEY is set).
   */
  async function storeFirstKey(): Promise<void> {
    const candidate = await generateSigningKey(clock.now(), sealingKey);
    const first = JSON.parse(
      await store.secrets.findOrCreateSecret('first-signing-key', JSON.stringify(candidate), clock.now()),
    ) as StoredSigningKey;
    await store.signingKeys.insertSigningKey({ ...first, createdAt: new Date(first.createdAt) });
  }

  /** The public key for `kid`, from the database when another node made it; undefined if unknown. */
  async function findVerificationKey(kid: string): Promise<Key | undefined> {
    const known = publicKeys.get(kid);
    if (known) return known;
    const stored = await store.signingKeys.findSigningKey(kid);
    if (!stored) return undefined;
    const key = await importJWK(JSON.parse(stored.publicJwk) as JWK, stored.alg);
    publicKeys.set(kid, key);
    return key;
  }

  /**
   * The JWKS (RFC 7517): public keys only, the active one and each older key until every token
   * it can have signed has expired (its successor's age, less the cache delay, passes the TTL).
   */
  async function publishedKeys(): Promise<{ keys: JWK[] }> {
    const now = clock.now().getTime();
    const graceMs = accessTokenTtlSeconds * 1000 + ACTIVE_KEY_CACHE_MS;
    const stored = await store.signingKeys.listSigningKeys();
    const published = stored.filter((_key, index) => {
      const successor = stored[index + 1];
      return successor === undefined || successor.createdAt.getTime() + graceMs > now;
    });
    return { keys: published.reverse().map((key) => JSON.parse(key.publicJwk) as JWK) };
  }

  /** Makes a new key the active one on this node at once (other nodes within 10 s); returns its kid. */
  async function rotate(): Promise<string> {
    // A strictly later created_at keeps "newest" well defined even within one millisecond.
    const newest = await store.signingKeys.findNewestSigningKey();
    const createdAt = new Date(Math.max(clock.now().getTime(), (newest?.createdAt.getTime() ?? 0) + 1));
    const key = await generateSigningKey(createdAt, sealingKey);
    await store.signingKeys.insertSigningKey(key);
    active = undefined;
    return key.kid;
  }

  await activeKey();
  return { activeKey, findVerificationKey, publishedKeys, rotate };
}

export type SigningKeys = Awaited<ReturnType<typeof createSigningKeys>>;

async function generateSigningKey(createdAt: Date, sealingKey: Buffer | undefined): Promise<StoredSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    alg: SIGNING_ALG,
    publicJwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' }),
    privateJwk: seal(JSON.stringify(await exportJWK(privateKey)), sealingKey),
    createdAt,
  };
}

function openPrivateKey(stored: string, key: Buffer | undefined): string {
  try {
    return unseal(stored, key);
  } catch (error) {
    if (!(error instanceof UnsealError)) throw error;
    throw new Error(
      key
        ? 'the signing keys cannot be decrypted: SECRET_KEY differs from the one they were made with'
        : 'the signing keys are encrypted: set the SECRET_KEY they were made with',
    );
  }
}
