import type { RecoveryRequests } from '../../mfa/recovery-requests.js';
import type { Clients } from '../../oauth/clients.js';
import type { PasswordGrant } from '../../oauth/password-grant.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  RecoveryConflict,
  RecoveryRequestBody,
  RecoveryRequestStatus,
  RecoveryWaiting,
  TokenResponse,
  toTokenResponseBody,
} from '../schemas.js';

const errors = { 400: ErrorBody, 409: RecoveryConflict, 429: ErrorBody };

/**
 * CONTRACT §20, recovery when every factor is lost: asked and completed with the password alone
 * (the person has no second factor left), seen and cancelled from any login of the user.
 */
export function recoveryRequestRoutes(
  app: App,
  deps: {
    recovery: RecoveryRequests;
    passwordGrant: PasswordGrant;
    clients: Clients;
    requireAccessToken: RequestGuard;
  },
) {
  const { recovery, passwordGrant, clients, requireAccessToken } = deps;

  app.post(
    '/mfa/recovery-request/',
    { schema: { body: RecoveryRequestBody, response: { 202: RecoveryWaiting, ...errors } } },
    async (request, reply) => {
      const { username, password } = request.body;
      const readyAt = await recovery.startRecovery(username, password, contextOf(request));
      return reply.code(202).send({ state: 'waiting' as const, ready_at: readyAt.toISOString() });
    },
  );

  app.post(
    '/mfa/recovery-request/complete/',
    { schema: { body: RecoveryRequestBody, response: { 200: TokenResponse, ...errors } } },
    async (request, reply) => {
      const { username, password } = request.body;
      // The seed's public client, as a password grant without client credentials gets.
      const client = await clients.authenticateClient();
      const result = await passwordGrant.grantAfterRecovery({ client, username, password }, contextOf(request));
      // RFC 6749 §5.1: an answer with tokens is not cached (Cache-Control: no-store is on every answer).
      reply.header('pragma', 'no-cache');
      return toTokenResponseBody(result.tokens);
    },
  );

  app.get(
    '/mfa/recovery-request/',
    { schema: { response: { 200: RecoveryRequestStatus, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => {
      const { state, readyAt } = await recovery.describeRecovery(request.principal.userId);
      return { state, ready_at: readyAt?.toISOString() ?? null };
    },
  );

  app.delete(
    '/mfa/recovery-request/',
    { schema: { response: { 204: {}, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request, reply) => {
      await recovery.cancelRecovery(request.principal.userId, 'by_user', contextOf(request));
      return reply.code(204).send();
    },
  );
}
