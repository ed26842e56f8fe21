import type { OAuthClient } from '../store/clients.js';
import { DEFAULT_METADATA } from './client-metadata.js';

/** Where the operators' console is served (CONTRACT §21), under the issuer. */
export const CONSOLE_PATH = '/admin/console/';

/**
 * The console's own client (CONTRACT §21): a public client of this OpenID Provider, built in so that
 * no operator has to register one. Its id is the console's address, which the page reads from its
 * own location: nothing to configure, and no registered client (a UUID) can have it. Its only
 * redirect is back to the console; it asks for `openid` alone (no refresh token: the page keeps
 * its tokens in memory and signs in again through the browser's session).
 */
export function consoleClientOf(issuer: string): OAuthClient {
  const url = `${issuer}${CONSOLE_PATH}`;
  return {
    ...DEFAULT_METADATA,
    id: url,
    name: 'Operators’ console',
    secretHash: '',
    mfaChallenge: 'error',
    redirectUris: [url],
    postLogoutRedirectUris: [url],
    tokenEndpointAuthMethod: 'none',
    allowedScopes: ['openid'],
  };
}
