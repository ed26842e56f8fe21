import type { AuditTrail } from '../../audit/audit-trail.js';
import type { MfaRemoval } from '../../mfa/mfa-removal.js';
import { type ClientMetadataInput, parseClientMetadata } from '../../oauth/client-metadata.js';
import type { ClientSettings as ClientSettingsRecord, Clients } from '../../oauth/clients.js';
import type { SigningKeys } from '../../oauth/signing-keys.js';
import type { WebhookEndpoint } from '../../store/webhooks.js';
import type { Accounts } from '../../users/accounts.js';
import type { Emails } from '../../users/emails.js';
import type { Invites } from '../../users/invites.js';
import type { WebhookEndpoints } from '../../webhooks/endpoints.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ClientIdParams,
  ClientList,
  ClientSecret,
  ClientSettings,
  ClientWithSecret,
  CreateClientBody,
  CreatedUser,
  CreatedWebhook,
  CreateUserBody,
  CreateWebhookBody,
  DeliveryParams,
  ErrorBody,
  InviteCreated,
  SecurityEvents,
  SetPasswordBody,
  SigningKeyCreated,
  SigningKeyList,
  UpdateClientBody,
  UserIdParams,
  UserLookupQuery,
  UserSummary,
  WebhookDeliveries,
  WebhookIdParams,
  WebhookList,
} from '../schemas.js';

function toClientSettings(client: ClientSettingsRecord) {
  return {
    client_id: client.id,
    name: client.name,
    mfa_challenge: client.mfaChallenge,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    allowed_scopes: client.allowedScopes.join(' '),
    web_origins: client.webOrigins,
    id_token_signed_response_alg: client.idTokenSignedResponseAlg,
    mfa_policy: client.mfaPolicy,
    remember_device_days: client.rememberDeviceDays,
  };
}

/** The settings in an admin request's body, checked (400 naming the field). */
function clientSettingsOf(body: { mfa_challenge?: 'seed' | 'error' } & ClientMetadataInput) {
  return {
    ...parseClientMetadata(body),
    ...(body.mfa_challenge !== undefined && { mfaChallenge: body.mfa_challenge }),
  };
}

export interface AdminRouteDeps {
  accounts: Accounts;
  emails: Emails;
  invites: Invites;
  clients: Clients;
  keys: SigningKeys;
  audit: AuditTrail;
  removal: MfaRemoval;
  webhooks: WebhookEndpoints;
  requireAdmin: RequestGuard;
}

export function adminRoutes(
  app: App,
  { accounts, emails, invites, clients, keys, audit, removal, webhooks, requireAdmin }: AdminRouteDeps,
) {
  app.post(
    '/admin/users',
    {
      schema: { body: CreateUserBody, response: { 201: CreatedUser, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      const { username, password, email } = request.body;
      const created = await accounts.createUser(username, password);
      // CONTRACT §20: the operator's address counts at once.
      if (email !== undefined) await emails.setVerifiedByOperator(created.id, email);
      const user = { ...created, ...(email !== undefined && { email }) };
      if (password !== undefined) return reply.code(201).send(user);
      // CONTRACT §19: an account without a password gets in through an invite.
      const invite = await invites.issueInvite(user.id, contextOf(request));
      return reply.code(201).send({ ...user, invite_url: invite.url });
    },
  );

  app.post(
    '/admin/users/:id/invite',
    {
      schema: {
        params: UserIdParams,
        response: { 201: InviteCreated, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      const invite = await invites.issueInvite(request.params.id, contextOf(request));
      return reply.code(201).send({ invite_url: invite.url, expires_at: invite.expiresAt.toISOString() });
    },
  );

  app.post(
    '/admin/users/:id/password',
    {
      schema: {
        params: UserIdParams,
        body: SetPasswordBody,
        response: { 204: {}, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await accounts.setPassword(request.params.id, request.body.password, contextOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    '/admin/users',
    {
      schema: {
        querystring: UserLookupQuery,
        response: { 200: UserSummary, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
      onRequest: requireAdmin,
    },
    async (request) => {
      const user = await accounts.getUser(request.query.username);
      return { id: user.id, username: user.username };
    },
  );

  app.delete(
    '/admin/users/:id',
    {
      schema: { params: UserIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await accounts.deleteUser(request.params.id);
      return reply.code(204).send();
    },
  );

  app.delete(
    '/admin/users/:id/mfa',
    {
      schema: { params: UserIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await accounts.getUserById(request.params.id);
      await removal.removeAllFactors(request.params.id, { by: 'operator' });
      return reply.code(204).send();
    },
  );

  app.delete(
    '/admin/users/:id/sessions',
    {
      schema: { params: UserIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await accounts.endSessions(request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/admin/clients',
    {
      schema: { body: CreateClientBody, response: { 201: ClientWithSecret, 400: ErrorBody, 401: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      const created = await clients.registerClient(request.body.name, clientSettingsOf(request.body));
      return reply.code(201).send({
        ...toClientSettings(created.settings),
        ...(created.clientSecret && { client_secret: created.clientSecret }),
      });
    },
  );

  app.get(
    '/admin/clients',
    { schema: { response: { 200: ClientList, 401: ErrorBody } }, onRequest: requireAdmin },
    async () => ({ clients: (await clients.listClients()).map(toClientSettings) }),
  );

  app.get(
    '/admin/clients/:id',
    {
      schema: { params: ClientIdParams, response: { 200: ClientSettings, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request) => toClientSettings(await clients.getClient(request.params.id)),
  );

  app.patch(
    '/admin/clients/:id',
    {
      schema: {
        params: ClientIdParams,
        body: UpdateClientBody,
        response: { 200: ClientWithSecret, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
      onRequest: requireAdmin,
    },
    async (request) => {
      const { name, ...settings } = request.body;
      const updated = await clients.updateClient(request.params.id, { ...clientSettingsOf(settings), name });
      return {
        ...toClientSettings(updated.settings),
        ...(updated.clientSecret && { client_secret: updated.clientSecret }),
      };
    },
  );

  app.delete(
    '/admin/clients/:id',
    {
      schema: { params: ClientIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await clients.deleteClient(request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/admin/clients/:id/secret',
    {
      schema: {
        params: ClientIdParams,
        response: { 201: ClientSecret, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
      onRequest: requireAdmin,
    },
    async (request, reply) =>
      reply
        .code(201)
        .send({ client_id: request.params.id, client_secret: await clients.rotateSecret(request.params.id) }),
  );

  app.get(
    '/admin/signing-keys',
    { schema: { response: { 200: SigningKeyList, 401: ErrorBody } }, onRequest: requireAdmin },
    async () => ({
      keys: (await keys.listKeys()).map((key) => ({
        kid: key.kid,
        alg: key.alg,
        created_at: key.createdAt.toISOString(),
        state: key.state,
      })),
    }),
  );

  app.post(
    '/admin/signing-keys',
    { schema: { response: { 201: SigningKeyCreated, 401: ErrorBody } }, onRequest: requireAdmin },
    async (_request, reply) => reply.code(201).send({ kid: await keys.rotate() }),
  );

  app.get(
    '/admin/users/:id/events',
    {
      schema: { params: UserIdParams, response: { 200: SecurityEvents, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request) => {
      await accounts.getUserById(request.params.id);
      const events = await audit.listEvents(request.params.id);
      return {
        events: events.map((event) => ({
          id: event.id,
          occurred_at: event.occurredAt.toISOString(),
          type: event.type,
          outcome: event.outcome,
          client_address: event.clientAddress ?? null,
          detail: event.detail ?? null,
        })),
      };
    },
  );

  app.post(
    '/admin/webhooks',
    {
      schema: { body: CreateWebhookBody, response: { 201: CreatedWebhook, 400: ErrorBody, 401: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      const { endpoint, secret } = await webhooks.createEndpoint(request.body.url, request.body.events);
      return reply.code(201).send({ ...toWebhookBody(endpoint), secret });
    },
  );

  app.get(
    '/admin/webhooks',
    { schema: { response: { 200: WebhookList, 401: ErrorBody } }, onRequest: requireAdmin },
    async () => ({ webhooks: (await webhooks.listEndpoints()).map(toWebhookBody) }),
  );

  app.delete(
    '/admin/webhooks/:id',
    {
      schema: { params: WebhookIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await webhooks.deleteEndpoint(request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/admin/webhooks/:id/deliveries/:event_id/redeliver',
    {
      schema: { params: DeliveryParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request, reply) => {
      await webhooks.redeliver(request.params.id, request.params.event_id);
      return reply.code(204).send();
    },
  );

  app.get(
    '/admin/webhooks/:id/deliveries',
    {
      schema: { params: WebhookIdParams, response: { 200: WebhookDeliveries, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAdmin,
    },
    async (request) => ({
      deliveries: (await webhooks.listDeliveries(request.params.id)).map((delivery) => ({
        event_id: delivery.eventId,
        type: delivery.eventType,
        attempt: delivery.attempt,
        status: delivery.status,
        response_status: delivery.responseStatus ?? null,
        attempted_at: delivery.attemptedAt?.toISOString() ?? null,
      })),
    }),
  );
}

function toWebhookBody(endpoint: WebhookEndpoint) {
  return { id: endpoint.id, url: endpoint.url, events: endpoint.events, created_at: endpoint.createdAt.toISOString() };
}
