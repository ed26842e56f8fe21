import formBody from '@fastify/formbody';
import { Type } from '@sinclair/typebox';
import { ServiceError } from '../../errors.js';
import type { AuthorizationCodes } from '../../oauth/authorization-codes.js';
import { type Clients, PUBLIC_CLIENT_ID } from '../../oauth/clients.js';
import type { TokenIntrospection } from '../../oauth/introspection.js';
import {
  MFA_OTP_GRANT,
  MFA_RECOVERY_CODE_GRANT,
  PASSKEY_GRANT,
  type PasswordGrant,
  type PasswordGrantResult,
} from '../../oauth/password-grant.js';
import type { RefreshGrant } from '../../oauth/refresh-grant.js';
import type { Revocation } from '../../oauth/revocation.js';
import type { App } from '../app-types.js';
import { readClientCredentials } from '../authenticate.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  IntrospectionResponse,
  MfaRequiredError,
  MfaRequiredResponse,
  TokenBody,
  TokenRequestBody,
  TokenResponse,
  toTokenResponseBody,
} from '../schemas.js';

export interface OAuthRouteDeps {
  clients: Clients;
  codes: AuthorizationCodes;
  passwordGrant: PasswordGrant;
  refreshGrant: RefreshGrant;
  revocation: Revocation;
  introspection: TokenIntrospection;
}

export const TOKEN_PATH = '/mfa/oauth2/token/';
export const REVOCATION_PATH = '/mfa/oauth2/revoke/';
export const INTROSPECTION_PATH = '/mfa/oauth2/introspect/';
/** RFC 8414 grant_types_supported: every grant the token endpoint answers. */
export const GRANT_TYPES = [
  'authorization_code',
  'password',
  'refresh_token',
  MFA_OTP_GRANT,
  MFA_RECOVERY_CODE_GRANT,
  PASSKEY_GRANT,
];

const errors = { 400: ErrorBody, 401: ErrorBody, 403: MfaRequiredError };
/** For the OpenAPI document: RFC 6749 §4.3.2 and RFC 7009/7662 bodies are forms; JSON is accepted too. */
const consumes = ['application/x-www-form-urlencoded', 'application/json'];

/** The OAuth endpoints, in their own scope: only they accept form bodies (RFC 6749 §4.3.2). */
export async function oauthRoutes(app: App, deps: OAuthRouteDeps) {
  const { clients, codes, passwordGrant, refreshGrant, revocation, introspection } = deps;
  await app.register(formBody, { bodyLimit: 65_536 });

  // RFC 6749 §5.1 and RFC 7662 §2.2: answers carrying tokens or their details must not be cached
  // (every answer has Cache-Control: no-store, app.ts); HTTP/1.0 caches also read Pragma.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('pragma', 'no-cache');
    done();
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
      const client = await clients.authenticateClient(readClientCredentials(request, body));
      const context = contextOf(request);
      const missing = (grant: string, fields: string) =>
        new ServiceError('invalid_request', `the ${grant} grant needs ${fields}`);
      if (body.grant_type === 'authorization_code') {
        if (body.code === undefined) throw missing('authorization_code', 'code, redirect_uri and code_verifier');
        if (client.id === PUBLIC_CLIENT_ID) {
          throw new ServiceError(
            'invalid_client',
            'the authorization_code grant needs the client: client_id (and its secret, for a confidential client)',
          );
        }
        return toTokenResponseBody(
          await codes.grantWithAuthorizationCode(
            { client, code: body.code, redirectUri: body.redirect_uri, codeVerifier: body.code_verifier },
            context,
          ),
        );
      }
      if (body.grant_type === 'refresh_token') {
        if (body.refresh_token === undefined) throw missing('refresh_token', 'refresh_token');
        return toTokenResponseBody(
          await refreshGrant.grantWithRefreshToken(
            { clientId: client.id, refreshToken: body.refresh_token, scope: body.scope },
            context,
          ),
        );
      }
      let result: PasswordGrantResult;
      if (body.grant_type === 'password') {
        if (body.username === undefined || body.password === undefined) {
          throw missing('password', 'username and password');
        }
        result = await passwordGrant.grantWithPassword(
          {
            client,
            username: body.username,
            password: body.password,
            scope: body.scope ?? '',
            mfaCode: body.mfa_code,
            backupCode: body.backup_code,
            mfaType: body.mfa_type,
            acrValues: body.acr_values?.split(' '),
            webauthnResponse: parseWebauthnResponse(body.webauthn_response),
          },
          context,
        );
      } else if (body.grant_type === PASSKEY_GRANT) {
        const webauthnResponse = parseWebauthnResponse(body.webauthn_response);
        if (webauthnResponse === undefined) throw missing('passkey', 'webauthn_response');
        result = await passwordGrant.grantWithPasskey({ client, webauthnResponse, scope: body.scope ?? '' }, context);
      } else if (body.grant_type === MFA_OTP_GRANT) {
        if (body.mfa_token === undefined || body.otp === undefined) throw missing('mfa-otp', 'mfa_token and otp');
        result = await passwordGrant.grantWithMfaToken({ client, mfaToken: body.mfa_token, otp: body.otp }, context);
      } else if (body.grant_type === MFA_RECOVERY_CODE_GRANT) {
        if (body.mfa_token === undefined || body.recovery_code === undefined) {
          throw missing('mfa-recovery-code', 'mfa_token and recovery_code');
        }
        result = await passwordGrant.grantWithMfaToken(
          { client, mfaToken: body.mfa_token, recoveryCode: body.recovery_code },
          context,
        );
      } else {
        throw new ServiceError('unsupported_grant_type', `grant_type must be one of: ${GRANT_TYPES.join(', ')}`);
      }
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
      const client = await clients.authenticateClient(readClientCredentials(request, request.body));
      await revocation.revokeToken(client.id, request.body.token);
      return reply.code(200).send();
    },
  );

  app.post(
    INTROSPECTION_PATH,
    { schema: { consumes, body: TokenBody, response: { 200: IntrospectionResponse, ...errors } } },
    async (request) => {
      const client = await clients.authenticateClient(readClientCredentials(request, request.body));
      if (client.id === PUBLIC_CLIENT_ID) {
        throw new ServiceError('invalid_client', 'introspection needs client authentication');
      }
      return introspection.introspect(request.body.token);
    },
  );
}

/** CONTRACT §12: the assertion is a JSON object in a JSON body, a JSON string in a form body. */
function parseWebauthnResponse(
  value: string | Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (value === undefined || typeof value === 'object') return value;
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new ServiceError(
    'invalid_request',
    'webauthn_response must be the AuthenticationResponseJSON, as a JSON object',
  );
}
