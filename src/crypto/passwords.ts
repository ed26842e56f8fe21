import { availableParallelism } from 'node:os';
import argon2, { type Algorithm } from '@node-rs/argon2';

// Algorithm.Argon2id: the binding declares its enum `const`, which isolated modules cannot read.
const ARGON2ID: Algorithm.Argon2id = 2;

/**
 * OWASP's minimum for Argon2id: 19 MiB, two passes, one lane. @node-rs/argon2 (the Rust `argon2`
 * crate) hashes about twice as fast as the `argon2` package (the reference C code) here, writes
 * the same PHC strings and verifies the hashes that package made (docs/PERFORMANCE.md).
 */
const PARAMETERS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MAX_PASSWORD_LENGTH = 1024;

/**
 * Argon2 is CPU-bound: more runs at once than cores adds no throughput, only 19 MiB of memory
 * each. libuv runs one per thread, and has one thread per core (start-settings.ts); one run more
 * is let through to wait in libuv's queue, so that a thread that finishes a hash starts the next
 * at once instead of waiting for the event loop to hand it over (7–10 % more logins per second,
 * docs/PERFORMANCE.md). Callers beyond that wait their turn here.
 */
const slots = { free: availableParallelism() + 1, waiting: [] as (() => void)[] };

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
  const storedOrDecoy = storedHash ?? (await decoyHash);
  const verify = (candidate: string) =>
    withArgon2Slot(() => argon2.verify(storedOrDecoy, candidate)).catch(() => false);
  const normalized = password.normalize('NFC');
  // Hashes made before passwords were normalised hold the password as it was typed: a password
  // that is not in NFC is tried that way too (a second Argon2 run, only for such passwords).
  const matches = (await verify(normalized)) || (normalized !== password && (await verify(password)));
  return storedHash !== undefined && matches;
}
