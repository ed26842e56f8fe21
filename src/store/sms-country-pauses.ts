import type { Executor } from './database.js';

export interface CountryPause {
  country: string;
  pausedAt: Date;
  pausedUntil: Date;
  /** Set when an operator resumed the country before `pausedUntil`. */
  resumedAt?: Date;
  /** The sends of the hour that tripped it, and the threshold they were about to pass. */
  sends: number;
  threshold: number;
}

/**
 * Pauses the country unless a pause of it is still running (or was resumed) at `pause.pausedAt`.
 * Returns true when this call paused it: one conditional upsert, so of several nodes tripping the
 * same threshold at once exactly one records the pause.
 */
export async function pauseCountry(db: Executor, pause: Omit<CountryPause, 'resumedAt'>): Promise<boolean> {
  const values = {
    paused_at: pause.pausedAt.toISOString(),
    paused_until: pause.pausedUntil.toISOString(),
    resumed_at: null,
    sends: pause.sends,
    threshold: pause.threshold,
  };
  const row = await db
    .insertInto('sms_country_pause')
    .values({ country: pause.country, ...values })
    .onConflict((conflict) =>
      conflict
        .column('country')
        .doUpdateSet(values)
        .where('sms_country_pause.paused_until', '<=', pause.pausedAt.toISOString()),
    )
    .returning('country')
    .executeTakeFirst();
  return row !== undefined;
}

/** The country's latest pause (running, resumed or over), or undefined. */
export async function findCountryPause(db: Executor, country: string): Promise<CountryPause | undefined> {
  const row = await db.selectFrom('sms_country_pause').selectAll().where('country', '=', country).executeTakeFirst();
  return row && toCountryPause(row);
}

/** Every country's latest pause, by country. */
export async function listCountryPauses(db: Executor): Promise<CountryPause[]> {
  const rows = await db.selectFrom('sms_country_pause').selectAll().orderBy('country').execute();
  return rows.map(toCountryPause);
}

/** Ends the country's running pause at `now`; returns false when none was running. */
export async function resumeCountry(db: Executor, country: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('sms_country_pause')
    .set({ resumed_at: now.toISOString() })
    .where('country', '=', country)
    .where('paused_until', '>', now.toISOString())
    .where('resumed_at', 'is', null)
    .returning('country')
    .executeTakeFirst();
  return row !== undefined;
}

function toCountryPause(row: {
  country: string;
  paused_at: string;
  paused_until: string;
  resumed_at: string | null;
  sends: number;
  threshold: number;
}): CountryPause {
  return {
    country: row.country,
    pausedAt: new Date(row.paused_at),
    pausedUntil: new Date(row.paused_until),
    resumedAt: row.resumed_at ? new Date(row.resumed_at) : undefined,
    sends: row.sends,
    threshold: row.threshold,
  };
}
