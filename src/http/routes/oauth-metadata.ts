import { ACR_VALUES } from '../../logins/step-up.js';
import { DEFAULT_ALLOWED_SCOPES } from '../../oauth/client-metadata.js';
import { ID_TOKEN_ALGS, type SigningKeys } from '../../oauth/signing-keys.js';
import type { App } from '../app-types.js';
import { AuthorizationServerMetadata, JsonWebKeySet } from '../schemas.js';
import { GRANT_TYPES, INTROSPECTION_PATH, REVOCATION_PATH, TOKEN_PATH } from './oauth.js';
import { AUTHORIZATION_PATH, END_SESSION_PATH, USERINFO_PATH } from './openid.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const DISCOVERY_PATHS = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'];

/**
 * OpenID Connect Discovery 1.0 and RFC 8414 metadata (one document at both addresses, so they
 * never disagree), and the RFC 7517 key set they point to.
 */
export function oauthMetadataRoutes(app: App, { issuer, keys }: { issuer: string; keys: SigningKeys }) {
  const authMethods = ['client_secret_basic', 'client_secret_post'];
  const metadata = {
    issuer,
    authorization_endpoint: issuer + AUTHORIZATION_PATH,
    token_endpoint: issuer + TOKEN_PATH,
    userinfo_endpoint: issuer + USERINFO_PATH,
    jwks_uri: issuer + JWKS_PATH,
    end_session_endpoint: issuer + END_SESSION_PATH,
    revocation_endpoint: issuer + REVOCATION_PATH,
    introspection_endpoint: issuer + INTROSPECTION_PATH,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES,
    code_challenge_methods_supported: ['S256'],
    subject_types_supported: ['public'],
    // RS256 first: what every relying party assumes unless told otherwise.
    id_token_signing_alg_values_supported: [...ID_TOKEN_ALGS],
    scopes_supported: DEFAULT_ALLOWED_SCOPES,
    claims_supported: [
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'acr',
      'amr',
      'sid',
      'preferred_username',
      'locale',
    ],
    prompt_values_supported: ['none', 'login'],
    token_endpoint_auth_methods_supported: [...authMethods, 'none'],
    revocation_endpoint_auth_methods_supported: [...authMethods, 'none'],
    introspection_endpoint_auth_methods_supported: authMethods,
    // RFC 9470 §6: what acr_values may ask for, strongest first.
    acr_values_supported: [...ACR_VALUES].reverse(),
    // RFC 9207: every authorization response names its issuer.
    authorization_response_iss_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false,
  };

  for (const path of DISCOVERY_PATHS) {
    app.get(path, { schema: { response: { 200: AuthorizationServerMetadata } } }, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return metadata;
    });
  }

  app.get(JWKS_PATH, { schema: { response: { 200: JsonWebKeySet } } }, async (_request, reply) => {
    // Short, so that a rotated key reaches verifiers well before tokens signed with it are common.
    reply.header('cache-control', 'public, max-age=60');
    return keys.publishedKeys();
  });
}
