import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import {
  calculateJwkThumbprint,
  exportJWK,
  type GenerateKeyPairOptions,
  generateKeyPair,
  importJWK,
  type JWK,
} from 'jose';
import type { Clock } from '../clock.js';
import { seal, UnsealError, unseal } from '../crypto/sealing.js';
import { deriveKey } from '../crypto/secrets.js';
import type { StoredSigningKey } from '../store/signing-keys.js';
import type { Store } from '../store/store.js';

/**
 * What a client may register as `id_token_signed_response_alg`. RS256 is what every relying party
 * assumes when it registers none (OpenID Connect Registration §2); the service keeps one active key
 * of each.
 */
export const ID_TOKEN_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type IdTokenAlg = (typeof ID_TOKEN_ALGS)[number];

/** The access tokens' algorithm (RFC 9068), and the only one an access token may name. */
export const SIGNING_ALG = 'EdDSA' satisfies IdTokenAlg;

/** RFC 7518 §3.3 asks for 2048-bit RSA keys at least; ES256 is P-256 by definition (§3.4). */
const KEY_PAIR_OPTIONS: Record<IdTokenAlg, GenerateKeyPairOptions> = {
  RS256: { modulusLength: 2048, extractable: true },
  ES256: { crv: 'P-256', extractable: true },
  EdDSA: { crv: 'Ed25519', extractable: true },
};

/** The algorithms whose keys are dated 1 ms before the EdDSA key they come with (see createSigningKeys). */
const DATED_BEFORE_EDDSA = ID_TOKEN_ALGS.filter((alg) => alg !== SIGNING_ALG);

/** How long a node keeps signing with the key it knows before looking for a newer one. */
const ACTIVE_KEY_CACHE_MS = 10_000;

type Key = Awaited<ReturnType<typeof importJWK>>;

/** The key that signs with `alg` now. */
export interface ActiveKey {
  kid: string;
  alg: IdTokenAlg;
  privateKey: KeyObject;
}

/** How node:crypto signs for each algorithm: its digest (none for EdDSA), and JWS's raw r‖s for ECDSA (RFC 7518 §3.4). */
const SIGN_OPTIONS: Record<IdTokenAlg, { digest: string | null; dsaEncoding?: 'ieee-p1363' }> = {
  RS256: { digest: 'sha256' },
  ES256: { digest: 'sha256', dsaEncoding: 'ieee-p1363' },
  EdDSA: { digest: null },
};

/**
 * A compact JWS (RFC 7515 §7.1) of `claims` signed with `key`, whose header names its alg, `typ`
 * and kid. Signed by node:crypto in this thread: jose signs through WebCrypto, whose argument
 * checks and thread-pool round trip cost three times an Ed25519 signature (docs/PERFORMANCE.md).
 */
export function signJwt(key: ActiveKey, typ: string, claims: Record<string, unknown>): string {
  const header = Buffer.from(JSON.stringify({ alg: key.alg, typ, kid: key.kid })).toString('base64url');
  const signingInput = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const { digest, dsaEncoding } = SIGN_OPTIONS[key.alg];
  const signature = sign(digest, Buffer.from(signingInput), { key: key.privateKey, dsaEncoding });
  return `${signingInput}.${signature.toString('base64url')}`;
}

export interface SigningKeysDeps {
  store: Store;
  clock: Clock;
  secretKey?: string;
  /** Tokens live this long, so a superseded key stays published this long after its successor appears. */
  accessTokenTtlSeconds: number;
}

/**
 * The signing keys, one active key per algorithm, kept in the database so that every node signs
 * and verifies alike. Private keys are sealed with AES-256-GCM under a key derived from SECRET_KEY
 * when it is set. Creating the service makes the first key of each algorithm if there is none; it
 * throws when a stored key is sealed and SECRET_KEY is missing or different.
 *
 * The newest key of all is always an EdDSA key: the build before this one signs access tokens
 * with the newest key whatever its alg, and may still run beside this one (a rolling upgrade) or
 * after it (a rollback). So the other algorithms' keys are dated 1 ms before the EdDSA key they
 * come with, and stored after it.
 */
export async function createSigningKeys({ store, clock, secretKey, accessTokenTtlSeconds }: SigningKeysDeps) {
  const sealingKey = secretKey === undefined ? undefined : deriveKey(secretKey, 'signing-key-encryption');
  const publicKeys = new Map<string, Key>();
  const activeKeys = new Map<IdTokenAlg, ActiveKey & { checkedAt: number }>();

  /** The newest key of `alg`, for signing; looked up again at most every 10 s so rotations reach every node. */
  async function activeKey(alg: IdTokenAlg = SIGNING_ALG): Promise<ActiveKey> {
    const now = clock.now().getTime();
    const known = activeKeys.get(alg);
    if (known && now - known.checkedAt < ACTIVE_KEY_CACHE_MS) return known;
    let newest = await store.signingKeys.findNewestSigningKey(alg);
    if (!newest) {
      await storeFirstKey(alg);
      newest = await store.signingKeys.findNewestSigningKey(alg);
      if (!newest) throw new Error(`no ${alg} signing key could be stored`);
    }
    if (known?.kid === newest.kid) {
      known.checkedAt = now;
      return known;
    }
    const privateJwk = JSON.parse(openPrivateKey(newest.privateJwk, sealingKey)) as JWK;
    const fresh = {
      kid: newest.kid,
      alg,
      privateKey: createPrivateKey({ key: privateJwk, format: 'jwk' }),
      checkedAt: now,
    };
    activeKeys.set(alg, fresh);
    return fresh;
  }

  /**
   * Nodes starting together on an empty database race to make the first key of each algorithm.
   * The first candidate stored under the algorithm's name wins (a primary key settles it), and
   * every node inserts that same key, which its kid lets in once: one key per algorithm, whoever
   * finishes first. The record holds the private key exactly as the signing_key table does
   * (sealed when SECRET_KEY is set).
   */
  async function storeFirstKey(alg: IdTokenAlg): Promise<void> {
    const candidate = await generateSigningKey(alg, await firstKeyDate(alg), sealingKey);
    const first = JSON.parse(
      await store.secrets.findOrCreateSecret(firstKeySecretName(alg), JSON.stringify(candidate), clock.now()),
    ) as StoredSigningKey;
    await store.signingKeys.insertSigningKey({ ...first, createdAt: new Date(first.createdAt) });
  }

  /** Now for an EdDSA key; for another algorithm, just before the newest EdDSA key (see above). */
  async function firstKeyDate(alg: IdTokenAlg): Promise<Date> {
    const accessTokenKey = alg === SIGNING_ALG ? undefined : await store.signingKeys.findNewestSigningKey(SIGNING_ALG);
    return new Date(accessTokenKey ? accessTokenKey.createdAt.getTime() - 1 : clock.now().getTime());
  }

  /** The public key for `kid`, of any algorithm, from the database when another node made it; undefined if unknown. */
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
   * The JWKS (RFC 7517), newest first: public keys only, for each algorithm the active one and each
   * older key until every token it can have signed has expired (its successor's age, less the
   * cache delay, passes the TTL).
   */
  async function publishedKeys(): Promise<{ keys: JWK[] }> {
    const published = (await listKeys()).filter((key) => key.state !== 'retired');
    return { keys: published.map((key) => JSON.parse(key.publicJwk) as JWK) };
  }

  /**
   * Every stored key, newest first, with what it does now: `active` (the newest of its algorithm:
   * it signs), `published` (in the JWKS while tokens it signed may live), or `retired`.
   */
  async function listKeys(): Promise<(StoredSigningKey & { state: 'active' | 'published' | 'retired' })[]> {
    const now = clock.now().getTime();
    const graceMs = accessTokenTtlSeconds * 1000 + ACTIVE_KEY_CACHE_MS;
    const stored = await store.signingKeys.listSigningKeys();
    const listed = stored.map((key, index) => {
      const successor = stored.slice(index + 1).find((later) => later.alg === key.alg);
      const state =
        successor === undefined ? 'active' : successor.createdAt.getTime() + graceMs > now ? 'published' : 'retired';
      return { ...key, state } as const;
    });
    return listed.reverse();
  }

  /**
   * Makes a new key of every algorithm the active one on this node at once (other nodes within
   * 10 s); returns the new EdDSA key's kid, the one access tokens name.
   */
  async function rotate(): Promise<string> {
    const newest = await Promise.all(ID_TOKEN_ALGS.map((alg) => store.signingKeys.findNewestSigningKey(alg)));
    // Strictly later dates keep "newest" well defined even within one millisecond, for the keys
    // dated 1 ms before the EdDSA key too.
    const latestMs = Math.max(0, ...newest.map((key) => key?.createdAt.getTime() ?? 0));
    const accessTokenKeyMs = Math.max(clock.now().getTime(), latestMs + 2);
    const [accessTokenKey, ...others] = await Promise.all([
      generateSigningKey(SIGNING_ALG, new Date(accessTokenKeyMs), sealingKey),
      ...DATED_BEFORE_EDDSA.map((alg) => generateSigningKey(alg, new Date(accessTokenKeyMs - 1), sealingKey)),
    ]);
    // The EdDSA key first: were another one in before it, the newest key of all would not be EdDSA.
    await store.signingKeys.insertSigningKey(accessTokenKey);
    for (const key of others) await store.signingKeys.insertSigningKey(key);
    activeKeys.clear();
    return accessTokenKey.kid;
  }

  // EdDSA first: the other algorithms' first keys are dated by it.
  await activeKey(SIGNING_ALG);
  for (const alg of DATED_BEFORE_EDDSA) await activeKey(alg);
  return { activeKey, findVerificationKey, publishedKeys, listKeys, rotate };
}

export type SigningKeys = Awaited<ReturnType<typeof createSigningKeys>>;

/** The service secret holding the first key of `alg`; EdDSA's name predates the others, and existing databases hold it. */
function firstKeySecretName(alg: IdTokenAlg): string {
  return alg === SIGNING_ALG ? 'first-signing-key' : `first-signing-key-${alg}`;
}

async function generateSigningKey(
  alg: IdTokenAlg,
  createdAt: Date,
  sealingKey: Buffer | undefined,
): Promise<StoredSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, KEY_PAIR_OPTIONS[alg]);
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    alg,
    publicJwk: JSON.stringify({ ...publicJwk, kid, alg, use: 'sig' }),
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
