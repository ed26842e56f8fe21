import { ACR_VALUES } from '../../logins/step-up.js';
import type { SigningKeys } from '../../oauth/signing-keys.js';
import type { App } from '../app-types.js';
import { AuthorizationServerMetadata, JsonWebKeySet } from '../schemas.js';
import { GRANT_TYPES, INTROSPECTION_PATH, REVOCATION_PATH, TOKEN_PATH } from './oauth.js';

export const JWKS_PATH = '/.well-known/jwks.json';

/** RFC 8414 authorization server metadata and the RFC 7517 key set it points to. */
export function oauthMetadataRoutes(app: App, { issuer, keys }: { issuer: string; keys: SigningKeys }) {
  const authMethods = ['client_secret_basic', 'client_secret_post'];
  const metadata = {
    issuer,
    token_endpoint: issuer + TOKEN_PATH,
    jwks_uri: issuer + JWKS_PATH,
    revocation_endpoint: issuer + REVOCATION_PATH,
    introspection_endpoint: issuer + INTROSPECTION_PATH,
    grant_types_supported: GRANT_TYPES,
    // No authorization endpoint: the password grant needs none (RFC 8414 §2 asks for the field).
    response_types_supported: [],
    token_endpoint_auth_methods_supported: [...authMethods, 'none'],
    revocation_endpoint_auth_methods_supported: [...authMethods, 'none'],
    introspection_endpoint_auth_methods_supported: authMethods,
    // RFC 9470 §6: what acr_values may ask for, strongest first.
    acr_values_supported: [...ACR_VALUES].reverse(),
  };

  app.get(
    '/.well-known/oauth-authorization-server',
    { schema: { response: { 200: AuthorizationServerMetadata } } },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return metadata;
    },
  );

  app.get(JWKS_PATH, { schema: { response: { 200: JsonWebKeySet } } }, async (_request, reply) => {
    // Short, so that a rotated key reaches verifiers well before tokens signed with it are common.
    reply.header('cache-control', 'public, max-age=60');
    return keys.publishedKeys();
  });
}
