import type { Passwords } from '../../users/passwords.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, PasswordChangeBody, PasswordState } from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 429: ErrorBody };

/** The person's own password (CONTRACT §19, §20): changed, added to an account without one, removed. */
export function passwordRoutes(
  app: App,
  { passwords, requireAccessToken }: { passwords: Passwords; requireAccessToken: RequestGuard },
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
}
