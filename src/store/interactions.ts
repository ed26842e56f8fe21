import type { Acr } from '../logins/step-up.js';
import type { Executor } from './database.js';

/** A sign-in in progress at the hosted page (see AuthorizationInteractionTable). */
export interface Interaction {
  id: string;
  browserHash: string;
  csrfHash: string;
  clientId: string;
  /** The checked authorization request, as JSON. */
  request: string;
  loginId: string;
  createdAt: Date;
  expiresAt: Date;
  /** Set once the password (or a sign-in session) named the user. */
  userId?: string;
  authTime?: number;
  amr?: string[];
  acr?: Acr;
  sessionGeneration?: number;
  /** The browser's sign-in session the proof came from, if it did. */
  signInSessionId?: string;
}

export async function insertInteraction(db: Executor, interaction: Interaction): Promise<void> {
  await db
    .insertInto('authorization_interaction')
    .values({
      id: interaction.id,
      browser_hash: interaction.browserHash,
      csrf_hash: interaction.csrfHash,
      client_id: interaction.clientId,
      request: interaction.request,
      user_id: interaction.userId ?? null,
      auth_time: interaction.authTime ?? null,
      amr: interaction.amr ? JSON.stringify(interaction.amr) : null,
      acr: interaction.acr ?? null,
      session_generation: interaction.sessionGeneration ?? null,
      login_id: interaction.loginId,
      created_at: interaction.createdAt.toISOString(),
      expires_at: interaction.expiresAt.toISOString(),
      finished_at: null,
      sign_in_session_id: interaction.signInSessionId ?? null,
    })
    .execute();
}

/** The unfinished, unexpired interaction with this id, or undefined. */
export async function findLiveInteraction(db: Executor, id: string, now: Date): Promise<Interaction | undefined> {
  if (id.includes('\0')) return undefined;
  const row = await db
    .selectFrom('authorization_interaction')
    .select([
      'id',
      'browser_hash',
      'csrf_hash',
      'client_id',
      'request',
      'user_id',
      'auth_time',
      'amr',
      'acr',
      'session_generation',
      'login_id',
      'created_at',
      'expires_at',
      'sign_in_session_id',
    ])
    .where('id', '=', id)
    .where('finished_at', 'is', null)
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      browserHash: row.browser_hash,
      csrfHash: row.csrf_hash,
      clientId: row.client_id,
      request: row.request,
      loginId: row.login_id,
      createdAt: new Date(row.created_at),
      expiresAt: new Date(row.expires_at),
      userId: row.user_id ?? undefined,
      authTime: row.auth_time ?? undefined,
      amr: row.amr ? (JSON.parse(row.amr) as string[]) : undefined,
      acr: (row.acr as Acr | null) ?? undefined,
      sessionGeneration: row.session_generation ?? undefined,
      signInSessionId: row.sign_in_session_id ?? undefined,
    }
  );
}

/**
 * Records what the sign-in proved so far, and with `finishedAt` finishes it, once. The user, once
 * named, is never replaced by another: false when the interaction was finished meanwhile or names
 * someone else.
 */
export async function recordInteractionProof(
  db: Executor,
  id: string,
  proof: { userId: string; authTime: number; amr: string[]; acr: Acr; sessionGeneration: number },
  finishedAt?: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('authorization_interaction')
    .set({
      user_id: proof.userId,
      auth_time: proof.authTime,
      amr: JSON.stringify(proof.amr),
      acr: proof.acr,
      session_generation: proof.sessionGeneration,
      ...(finishedAt && { finished_at: finishedAt.toISOString() }),
    })
    .where('id', '=', id)
    .where('finished_at', 'is', null)
    .where((eb) => eb.or([eb('user_id', 'is', null), eb('user_id', '=', proof.userId)]))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Finishes the interaction, once: false when it was finished first (a racing request). */
export async function finishInteraction(db: Executor, id: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('authorization_interaction')
    .set({ finished_at: now.toISOString() })
    .where('id', '=', id)
    .where('finished_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Forgets interactions that expired before `cutoff`. */
export async function deleteInteractionsBefore(db: Executor, cutoff: Date): Promise<void> {
  await db.deleteFrom('authorization_interaction').where('expires_at', '<', cutoff.toISOString()).execute();
}
