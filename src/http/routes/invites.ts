import type { InviteRedemption } from '../../users/invites.js';
import type { App } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  InviteAccepted,
  InvitePasskeyBody,
  InvitePasskeyOptionsBody,
  toTokenResponseBody,
  WebauthnRegistrationOptions,
} from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 410: ErrorBody };

/**
 * CONTRACT §19: the account page's side of an invite link: options for the account's first
 * passkey, then the passkey itself, which spends the invite and signs the person in.
 */
export function inviteRoutes(app: App, { invites }: { invites: InviteRedemption }) {
  app.post(
    '/mfa/invite/passkey/options/',
    { schema: { body: InvitePasskeyOptionsBody, response: { 200: WebauthnRegistrationOptions, ...errors } } },
    async (request) => ({ options: await invites.passkeyOptions(request.body.invite, request.body.name) }),
  );

  app.post(
    '/mfa/invite/passkey/',
    { schema: { body: InvitePasskeyBody, response: { 200: InviteAccepted, ...errors } } },
    async (request) => {
      const { body } = request;
      const accepted = await invites.accept(body.invite, body.credential, body.name, contextOf(request));
      return { ...toTokenResponseBody(accepted.tokens), username: accepted.username };
    },
  );
}
