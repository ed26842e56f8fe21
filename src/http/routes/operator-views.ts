import type { Clock } from '../../clock.js';
import { ServiceError } from '../../errors.js';
import { isLanguage } from '../../i18n/messages.js';
import type { UserThrottles } from '../../logins/user-throttles.js';
import type { CountryBudgets } from '../../mfa/country-budgets.js';
import type { Store } from '../../store/store.js';
import type { App, RequestGuard } from '../app-types.js';
import {
  CountryParams,
  ErrorBody,
  SignInStats,
  SmsCountries,
  SmsStats,
  StatsQuery,
  UserDetail,
  UserIdParams,
  UserSearchPage,
  UserSearchQuery,
} from '../schemas.js';

const HOUR_MS = 3_600_000;
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody };

const isoOrNull = (date: Date | undefined) => date?.toISOString() ?? null;

/**
 * What the operators' console reads (CONTRACT §21), for scripts too: users a page at a time, one
 * user's factors, logins and devices, the SMS budgets and pauses, and the SMS and sign-in counts
 * per hour its charts draw, aggregated by the database. Plus the SMS resume, which goes with them.
 */
export function operatorViewRoutes(
  app: App,
  {
    store,
    clock,
    countries,
    userThrottles,
    requireAdmin,
  }: {
    store: Store;
    clock: Clock;
    countries: CountryBudgets;
    userThrottles: UserThrottles;
    requireAdmin: RequestGuard;
  },
) {
  /** The user with this id; throws 404 `not_found`. */
  async function getUser(id: string) {
    const user = await store.operatorViews.findUserSummary(id);
    if (!user) throw new ServiceError('not_found', 'no user has this id');
    return user;
  }

  app.get(
    '/admin/users/search',
    { schema: { querystring: UserSearchQuery, response: { 200: UserSearchPage, ...errors } }, onRequest: requireAdmin },
    async (request) => {
      const limit = Number(request.query.limit ?? 20);
      const prefix = request.query.q ?? '';
      const byEmail = prefix.includes('@');
      const users = await store.operatorViews.searchUsers({ prefix, byEmail, after: request.query.after, limit });
      const last = users.at(-1);
      const nextAfter = byEmail ? last?.email : last?.username;
      return {
        users: users.map(toUserSummary),
        ...(users.length === limit && nextAfter !== undefined && { next_after: nextAfter }),
      };
    },
  );

  app.get(
    '/admin/users/:id',
    {
      schema: { params: UserIdParams, response: { 200: UserDetail, ...errors, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request) => {
      const user = await getUser(request.params.id);
      const userId = user.id;
      const now = clock.now();
      const [factors, logins, devices, lockedUntil, language] = await Promise.all([
        store.factors.listFactors(userId),
        store.operatorViews.listLiveLogins(userId, now),
        store.rememberedDevices.listRememberedDevices(userId, now),
        userThrottles.lockedUntil(user),
        store.users.findUserLanguage(userId),
      ]);
      return {
        ...toUserSummary(user),
        locked_until: isoOrNull(lockedUntil),
        language: isLanguage(language) ? language : null,
        factors: factors
          .filter((factor) => factor.status === 'verified')
          .map((factor) => ({
            id: factor.id,
            type: factor.type,
            name: factor.name,
            is_default: factor.isDefault,
            created_at: factor.createdAt.toISOString(),
            last_used_at: isoOrNull(factor.lastUsedAt),
          })),
        sessions: logins.map((login) => ({
          id: login.id,
          client_id: login.clientId,
          client_name: login.clientName ?? null,
          amr: login.amr,
          acr: login.acr,
          signed_in_at: login.authTime.toISOString(),
          last_refreshed_at: login.lastRefreshedAt.toISOString(),
          expires_at: login.expiresAt.toISOString(),
          browser_sign_in: login.isBrowserSignIn,
        })),
        remembered_devices: devices.map((device) => ({
          id: device.id,
          browser: device.browser,
          created_at: device.createdAt.toISOString(),
          last_used_at: device.lastUsedAt.toISOString(),
          expires_at: device.expiresAt.toISOString(),
        })),
      };
    },
  );

  app.post(
    '/admin/users/:id/unlock',
    {
      schema: { params: UserIdParams, response: { 204: {}, ...errors, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await userThrottles.unlock(await getUser(request.params.id));
      return reply.code(204).send();
    },
  );

  app.get(
    '/admin/sms/countries',
    { schema: { response: { 200: SmsCountries, ...errors } }, onRequest: requireAdmin },
    async () => ({
      countries: (await countries.listCountries()).map((row) => ({
        country: row.country,
        sent_this_hour: row.sentThisHour,
        hourly_limit: row.hourlyLimit,
        average_per_hour: row.averagePerHour,
        pause_threshold: row.pauseThreshold,
        paused_until: isoOrNull(row.pausedUntil),
        resumed_at: isoOrNull(row.resumedAt),
      })),
    }),
  );

  app.post(
    '/admin/sms/countries/:country/resume',
    {
      schema: { params: CountryParams, response: { 204: {}, ...errors, 409: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      if (!(await countries.resume(request.params.country))) {
        throw new ServiceError(
          'country_not_paused',
          `enrolment SMS to ${request.params.country} are not paused: GET /admin/sms/countries lists the pauses`,
        );
      }
      return reply.code(204).send();
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
      return { since: from.toISOString(), rows: await store.operatorViews.signInsPerHour(from, clock.now()) };
    },
  );
}

function toUserSummary(user: {
  id: string;
  username: string;
  email?: string;
  mfaEnabled: boolean;
  isOperator: boolean;
  createdAt: Date;
}) {
  return {
    id: user.id,
    username: user.username,
    ...(user.email !== undefined && { email: user.email }),
    mfa_enabled: user.mfaEnabled,
    is_operator: user.isOperator,
    created_at: user.createdAt.toISOString(),
  };
}
