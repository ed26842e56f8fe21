import formBody from '@fastify/formbody';
import { Type } from '@sinclair/typebox';
import { ServiceError } from '../../errors.js';
import { type Clients, PUBLIC_CLIENT_ID } from '../../oauth/clients.js';
import type { TokenIntrospection } from '../../oauth/introspection.js';
import type { PasswordGrant } from '../../oauth/password-grant.js';
import type { RefreshGrant } from '../../oauth/refresh-grant.js';
import type { Revocation } from '../../oauth/revocation.js';
import type { App } from '../app-types.js';
import { readClientCredentials } from '../authenticate.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  IntrospectionResponse,
  MfaRequiredResponse,
  TokenBody,
  TokenRequestBody,
  TokenResponse,
  toTokenResponseBody,
} from '../schemas.js';

export interface OAuthRouteDeps {
  clients: Clients;
  passwordGrant: PasswordGrant;
  refreshGrant: RefreshGrant;
  revocation: Revocation;
  introspection: TokenIntrospection;
}

export const TOKEN_PATH = '/mfa/oauth2/token/';
export const REVOCATION_PATH = '/mfa/oauth2/revoke/';
export const INTROSPECTION_PATH = '/mfa/oauth2/introspect/';

const errors = { 400: ErrorBody, 401: ErrorBody };
/** For the OpenAPI document: RFC 6749 §4.3.2 and RFC 7009/7662 bodies are forms; JSON is accepted too. */
const consumes = ['application/x-www-form-urlencoded', 'application/json'];

/** The OAuth endpoints, in their own scope: only they accept form bodies (RFC 6749 §4.3.2). */
export async function oauthRoutes(app: App, deps: OAuthRouteDeps) {
  const { clients, passwordGrant, refreshGrant, revocation, introspection } = deps;
  await app.register(formBody, { bodyLimit: 65_536 });

  // RFC 6749 §5.1 and RFC 7662 §2.2: answers carrying tokens or their details must not be cached.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    reply.header('pragma', 'no-cache');
  });

  app.post(
    TOKEN_PATH,
    {
      schema: {
        consumes,
        body: TokenRequestBody,
        response: { 200: Type.Union([TokenResponse, MfaRequiredResponse]), ...errors },
      },
    },
    async (request) => {
      const body = request.body;
      const clientId = await clients.authenticateClient(readClientCredentials(request, body));
      if (body.grant_type === 'refresh_token') {
        if (body.refresh_token === undefined) {
          throw new ServiceError('invalid_request', 'the refresh_token grant needs refresh_token');
        }
        return toTokenResponseBody(
          await refreshGrant.grantWithRefreshToken(
            { clientId, refreshToken: body.refresh_token, scope: body.scope },
            contextOf(request),
          ),
        );
      }
      if (body.grant_type !== 'password') {
        throw new ServiceError('unsupported_grant_type', 'grant_type must be password or refresh_token');
      }
      if (body.username === undefined || body.password === undefined) {
        throw new ServiceError('invalid_request', 'the password grant needs username and password');
      }
      const result = await passwordGrant.grantWithPassword(
        {
          clientId,
          username: body.username,
          password: body.password,
          scope: body.scope ?? '',
          mfaCode: body.mfa_code,
          backupCode: body.backup_code,
          mfaType: body.mfa_type,
        },
        contextOf(request),
      );
      if ('tokens' in result) return toTokenResponseBody(result.tokens);
      const { mfaType, mfaTypes, ...challenge } = result.challenge;
      return {
        mfa_required: true as const,
        mfa_type: mfaType,
        ...(mfaTypes ? { mfa_types: mfaTypes } : {}),
        ...challenge,
      };
    },
  );

  app.post(
    REVOCATION_PATH,
    { schema: { consumes, body: TokenBody, response: { 200: {}, ...errors } } },
    async (request, reply) => {
      const clientId = await clients.authenticateClient(readClientCredentials(request, request.body));
      await revocation.revokeToken(clientId, request.body.token);
      return reply.code(200).send();
    },
  );

  app.post(
    INTROSPECTION_PATH,
    { schema: { consumes, body: TokenBody, response: { 200: IntrospectionResponse, ...errors } } },
    async (request) => {
      const clientId = await clients.authenticateClient(readClientCredentials(request, request.body));
      if (clientId === PUBLIC_CLIENT_ID) {
        throw new ServiceError('invalid_client', 'introspection needs client authentication');
      }
      return introspection.introspect(request.body.token);
    },
  );
}
