import type { Enrolment } from '../../mfa/enrolment.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, MfaStatus, SmsRequestBody, SmsVerifyBody, toMfaStatusBody } from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody };

export function smsRoutes(
  app: App,
  { enrolment, requireAccessToken }: { enrolment: Enrolment; requireAccessToken: RequestGuard },
) {
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
      toMfaStatusBody(
        await enrolment.requestSmsEnrolment(request.principal.userId, request.body.phone_number, contextOf(request)),
      ),
  );

  app.put(
    '/mfa/sms/verify/',
    { schema: { body: SmsVerifyBody, response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) =>
      toMfaStatusBody(
        await enrolment.confirmSmsEnrolment(
          request.principal.userId,
          request.body.mfa_code,
          request.principal,
          contextOf(request),
        ),
      ),
  );
}
