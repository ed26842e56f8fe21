import { availableParallelism } from 'node:os';
import argon2 from 'argon2';

/** OWASP's minimum for Argon2id: 19 MiB, two passes, one lane. */
const PARAMETERS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MAX_PASSWORD_LENGTH = 1024;

/**
 * Argon2 is CPU-bound: more runs at once than cores adds no throughput, only 19 MiB of memory
 * each. Callers beyond that wait their turn here instead of in libuv's queue.
 */
const slots = { free: availableParallelism(), waiting: [] as (() => void)[] };

async function withArgon2Slot<T>(work: () => Promise<T>): Promise<T> {
  if (slots.free > 0) slots.free -= 1;
  else await new Promise<void>((resolve) => slots.waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = slots.waiting.shift();
    if (next) next();
    else slots.free += 1;
  }
}

/**
 * Passwords are hashed in Unicode NFC, so that "é" typed as one code point or as "e" and a
 * combining accent is the same password on every keyboard.
 */
export function hashPassword(password: string): Promise<string> {
  return withArgon2Slot(() => argon2.hash(password.normalize('NFC'), PARAMETERS));
}

/** The Argon2 parameters, for the benchmark's raw-hash ceiling. */
export const passwordHashParameters = PARAMETERS;

let decoyHash: Promise<string> | undefined;

/**
 * Verifies a password against its stored hash; with no hash (unknown user) it verifies against
 * a decoy so that both cases cost one Argon2 computation and answer in about the same time.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  decoyHash ??= hashPassword('decoy password that matches no account');
  const hash = storedHash ?? (await decoyHash);
  const verify = (candidate: string) => withArgon2Slot(() => argon2.verify(hash, candidate)).catch(() => false);
  const normalized = password.normalize('NFC');
  // Hashes made before passwords were normalised hold the password as it was typed: a password
  // that is not in NFC is tried that way too (a second Argon2 run, only for such passwords).
  const matches = (await verify(normalized)) || (normalized !== password && (await verify(password)));
  return storedHash !== undefined && matches;
}
