import type { WebauthnFactor } from '../../mfa/factors/webauthn.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  MfaStatus,
  toMfaStatusBody,
  WebauthnRegistrationOptions,
  WebauthnRequestBody,
  WebauthnVerifyBody,
} from '../schemas.js';

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

/** Passkey enrolment (CONTRACT §12): options for navigator.credentials.create(), then its answer. */
export function webauthnRoutes(
  app: App,
  { webauthn, requireAccessToken }: { webauthn: WebauthnFactor; requireAccessToken: RequestGuard },
) {
  app.put(
    '/mfa/webauthn/request/',
    {
      schema: { body: WebauthnRequestBody, response: { 200: WebauthnRegistrationOptions, ...errors } },
      onRequest: requireAccessToken,
    },
    async (request) => ({ options: await webauthn.requestEnrolment(request.principal, request.body.name) }),
  );

  app.put(
    '/mfa/webauthn/verify/',
    { schema: { body: WebauthnVerifyBody, response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) =>
      toMfaStatusBody(
        await webauthn.confirmEnrolment(
          request.principal,
          request.body.credential,
          request.body.name,
          contextOf(request),
        ),
      ),
  );
}
