import type { Clock } from '../../clock.js';
import type { Store } from '../../store/store.js';
import type { App, RequestGuard } from '../app-types.js';
import { ErrorBody, SignInStats, SmsStats, StatsQuery, UserSearchPage, UserSearchQuery } from '../schemas.js';

const HOUR_MS = 3_600_000;
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody };

/**
 * What the operators' console reads (CONTRACT §21), for scripts too: users a page at a time, and
 * the SMS and sign-in counts per hour its charts draw, aggregated by the database.
 */
export function operatorViewRoutes(
  app: App,
  { store, clock, requireAdmin }: { store: Store; clock: Clock; requireAdmin: RequestGuard },
) {
  app.get(
    '/admin/users/search',
    { schema: { querystring: UserSearchQuery, response: { 200: UserSearchPage, ...errors } }, onRequest: requireAdmin },
    async (request) => {
      const limit = Number(request.query.limit ?? 20);
      const users = await store.operatorViews.searchUsers({
        prefix: request.query.q ?? '',
        after: request.query.after,
        limit,
      });
      const last = users.at(-1);
      return {
        users: users.map((user) => ({
          id: user.id,
          username: user.username,
          mfa_enabled: user.mfaEnabled,
          is_operator: user.isOperator,
          created_at: user.createdAt.toISOString(),
        })),
        ...(users.length === limit && last && { next_after: last.username }),
      };
    },
  );

  /** The start of the clock hour `hours` hours before this one's. */
  const since = (hours: string | undefined) => {
    const now = clock.now().getTime();
    return new Date(now - (now % HOUR_MS) - (Number(hours ?? 168) - 1) * HOUR_MS);
  };

  app.get(
    '/admin/stats/sms',
    { schema: { querystring: StatsQuery, response: { 200: SmsStats, ...errors } }, onRequest: requireAdmin },
    async (request) => {
      const from = since(request.query.hours);
      return { since: from.toISOString(), rows: await store.operatorViews.smsSendsPerCountryHour(from) };
    },
  );

  app.get(
    '/admin/stats/sign-ins',
    { schema: { querystring: StatsQuery, response: { 200: SignInStats, ...errors } }, onRequest: requireAdmin },
    async (request) => {
      const from = since(request.query.hours);
      return { since: from.toISOString(), rows: await store.operatorViews.signInsPerHour(from) };
    },
  );
}
