import type { Emails } from '../../users/emails.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { EmailRequestBody, EmailState, EmailVerifyBody, ErrorBody } from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody };

/** The user's email address (CONTRACT §20): asked for, proved with the code mailed to it, shown. */
export function emailRoutes(
  app: App,
  { emails, requireAccessToken }: { emails: Emails; requireAccessToken: RequestGuard },
) {
  app.get(
    '/mfa/email/',
    { schema: { response: { 200: EmailState, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => emails.getEmail(request.principal.userId),
  );

  app.put(
    '/mfa/email/request/',
    {
      schema: { body: EmailRequestBody, response: { 200: EmailState, ...errors, 429: ErrorBody, 503: ErrorBody } },
      onRequest: requireAccessToken,
    },
    async (request) => emails.requestVerification(request.principal, request.body.email, contextOf(request)),
  );

  app.put(
    '/mfa/email/verify/',
    { schema: { body: EmailVerifyBody, response: { 200: EmailState, ...errors } }, onRequest: requireAccessToken },
    async (request) => emails.confirmVerification(request.principal, request.body.mfa_code, contextOf(request)),
  );
}
