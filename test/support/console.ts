import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { runAdmin } from './admin-cli.js';
import { createTotpUser, PASSWORD } from './openid-flow.js';
import type { Service } from './service.js';

// What the console's tests share (CONTRACT §21): operators granted by the command line, SMS history
// as the fraud defence's counters leave it, and the hosted sign-in as an operator goes through it.

const HOUR_MS = 3_600_000;

/** `npm run admin -- grant-operator USERNAME`, as the README tells operators. */
export async function grantOperator(service: Service, username: string): Promise<void> {
  const run = await runAdmin(service.config.databaseUrl, ['grant-operator', username]);
  assert.equal(run.code, 0, run.stderr);
}

/**
 * Who the console's tests meet: olga, an operator, and tina, a user who has signed in to an app (a
 * session the console shows); both with an authenticator app.
 */
export async function createOperatorAndUser(service: Service) {
  const operator = await createTotpUser(service, 'olga');
  await grantOperator(service, 'olga');
  const tina = await createTotpUser(service, 'tina');
  await service.accessToken('tina', PASSWORD, { mfa_code: tina.code() });
  return { operator, tina };
}

/** The start of the clock hour `hoursAgo` hours before the service's current one. */
export function hourStart(service: Service, hoursAgo = 0): Date {
  const now = service.clock.now().getTime();
  return new Date(now - (now % HOUR_MS) - hoursAgo * HOUR_MS);
}

/** Enrolment SMS sent to `country` in the hour `hoursAgo` hours back, in the counters the budgets keep. */
export async function addSmsSends(service: Service, country: string, hoursAgo: number, sends: number): Promise<void> {
  const windowStart = hourStart(service, hoursAgo).toISOString();
  await service.execute(
    sql`insert into sms_counter (scope, window_start, sends) values (${`country:${country}`}, ${windowStart}, ${sends})`,
  );
}

/** `country`'s enrolment SMS paused by the anomaly check until the end of this hour. */
export async function pauseCountry(service: Service, country: string): Promise<void> {
  const now = service.clock.now();
  const until = new Date(hourStart(service).getTime() + HOUR_MS);
  await service.execute(
    sql`insert into sms_country_pause (country, paused_at, paused_until, resumed_at, sends, threshold)
        values (${country}, ${now.toISOString()}, ${until.toISOString()}, null, 400, 300)`,
  );
}
