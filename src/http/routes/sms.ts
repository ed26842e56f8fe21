import type { SmsFactor } from '../../mfa/factors/sms.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, MfaStatus, SmsRequestBody, SmsVerifyBody, toMfaStatusBody } from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

/** SMS enrolment (the seed's two steps). */
export function smsRoutes(app: App, { sms, requireAccessToken }: { sms: SmsFactor; requireAccessToken: RequestGuard }) {
  app.put(
    '/mfa/sms/request/',
    {
      schema: {
        body: SmsRequestBody,
        response: { 200: MfaStatus, ...errors, 429: ErrorBody, 502: ErrorBody, 504: ErrorBody },
      },
      onRequest: requireAccessToken,
    },
    async (request) =>
      toMfaStatusBody(await sms.requestEnrolment(request.principal, request.body.phone_number, contextOf(request))),
  );

  app.put(
    '/mfa/sms/verify/',
    { schema: { body: SmsVerifyBody, response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) =>
      toMfaStatusBody(await sms.confirmEnrolment(request.principal, request.body.mfa_code, contextOf(request))),
  );
}
