import type { EmailFactor } from '../../mfa/factors/email.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  EmailFactorOffer,
  EmailFactorStart,
  ErrorBody,
  MfaStatus,
  SmsVerifyBody,
  toMfaStatusBody,
} from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

/** Email codes as a second factor (CONTRACT §20, EMAIL_FACTOR=on): a code to the verified address, then back. */
export function emailFactorRoutes(
  app: App,
  { emailFactor, requireAccessToken }: { emailFactor: EmailFactor; requireAccessToken: RequestGuard },
) {
  // What the account page needs to offer them: whether they are on here, and where codes would go.
  app.get(
    '/mfa/email-factor/',
    { schema: { response: { 200: EmailFactorOffer, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => emailFactor.describe(request.principal.userId),
  );

  app.put(
    '/mfa/email-factor/request/',
    {
      schema: { response: { 200: EmailFactorStart, ...errors, 429: ErrorBody, 503: ErrorBody } },
      onRequest: requireAccessToken,
    },
    async (request) => {
      const { email, ...status } = await emailFactor.requestEnrolment(request.principal, contextOf(request));
      return { ...toMfaStatusBody(status), email };
    },
  );

  app.put(
    '/mfa/email-factor/verify/',
    { schema: { body: SmsVerifyBody, response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) =>
      toMfaStatusBody(await emailFactor.confirmEnrolment(request.principal, request.body.mfa_code, contextOf(request))),
  );
}
