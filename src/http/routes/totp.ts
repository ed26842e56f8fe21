import type { TotpFactor } from '../../mfa/factors/totp.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, MfaStatus, SmsVerifyBody, TotpEnrolment, TotpRequestBody, toMfaStatusBody } from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

/** Authenticator-app enrolment (CONTRACT §11): a secret to scan, then a code from the app. */
export function totpRoutes(
  app: App,
  { totp, requireAccessToken }: { totp: TotpFactor; requireAccessToken: RequestGuard },
) {
  app.put(
    '/mfa/totp/request/',
    {
      schema: { body: TotpRequestBody, response: { 200: TotpEnrolment, ...errors } },
      onRequest: requireAccessToken,
    },
    async (request) => {
      const start = await totp.requestEnrolment(request.principal, request.body.name);
      return { factor_id: start.factorId, secret: start.secret, otpauth_uri: start.otpauthUri };
    },
  );

  app.put(
    '/mfa/totp/verify/',
    { schema: { body: SmsVerifyBody, response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) =>
      toMfaStatusBody(await totp.confirmEnrolment(request.principal, request.body.mfa_code, contextOf(request))),
  );
}
