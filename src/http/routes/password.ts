import type { PasswordReset } from '../../users/password-reset.js';
import type { Passwords } from '../../users/passwords.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  PasswordChangeBody,
  PasswordResetAccepted,
  PasswordResetBody,
  PasswordResetRequestBody,
  PasswordState,
} from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 429: ErrorBody };

/** The person's own password (CONTRACT §19, §20): changed, added to an account without one, removed. */
export function passwordRoutes(
  app: App,
  {
    passwords,
    reset,
    requireAccessToken,
  }: { passwords: Passwords; reset: PasswordReset; requireAccessToken: RequestGuard },
) {
  app.get(
    '/mfa/password/',
    { schema: { response: { 200: PasswordState, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => ({ has_password: await passwords.hasPassword(request.principal.userId) }),
  );

  app.put(
    '/mfa/password/',
    {
      schema: { body: PasswordChangeBody, response: { 204: {}, ...errors } },
      onRequest: requireAccessToken,
    },
    async (request, reply) => {
      await passwords.changePassword(
        request.principal,
        { current: request.body.current_password, next: request.body.new_password },
        contextOf(request),
      );
      return reply.code(204).send();
    },
  );

  app.delete(
    '/mfa/password/',
    { schema: { response: { 204: {}, ...errors } }, onRequest: requireAccessToken },
    async (request, reply) => {
      await passwords.removePassword(request.principal, contextOf(request));
      return reply.code(204).send();
    },
  );

  // CONTRACT §20, "forgot password": no access token, since the person cannot sign in.
  app.post(
    '/mfa/password/reset/',
    {
      schema: {
        body: PasswordResetRequestBody,
        response: { 202: PasswordResetAccepted, 400: ErrorBody, 429: ErrorBody },
      },
    },
    async (request, reply) => {
      await reset.requestReset(request.body, contextOf(request));
      return reply.code(202).send({});
    },
  );

  app.put(
    '/mfa/password/reset/',
    { schema: { body: PasswordResetBody, response: { 204: {}, 400: ErrorBody } } },
    async (request, reply) => {
      await reset.resetPassword(request.body.token, request.body.new_password, contextOf(request));
      return reply.code(204).send();
    },
  );
}
