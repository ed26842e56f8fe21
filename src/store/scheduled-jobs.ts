import type { Executor } from './database.js';

/**
 * Claims the job `name` when it is due at `now` (or has never run) and makes it due next at
 * `nextDueAt`, in one statement: of nodes claiming together, exactly one gets true.
 */
export async function claimDueJob(db: Executor, name: string, now: Date, nextDueAt: Date): Promise<boolean> {
  const row = await db
    .insertInto('scheduled_job')
    .values({ name, due_at: nextDueAt.toISOString() })
    .onConflict((conflict) =>
      conflict
        .column('name')
        .doUpdateSet({ due_at: nextDueAt.toISOString() })
        .where('scheduled_job.due_at', '<=', now.toISOString()),
    )
    .returning('name')
    .executeTakeFirst();
  return row !== undefined;
}
