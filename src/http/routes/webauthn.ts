import type { WebauthnFactor } from '../../mfa/factors/webauthn.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  MfaStatus,
  PasskeySignInOptions,
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

  // CONTRACT §19: options for signing in with a passkey alone (the account page's and the hosted
  // sign-in's "Sign in with a passkey", and autofill); anyone may ask, and nothing is stored.
  app.post('/mfa/webauthn/sign-in/', { schema: { response: { 200: PasskeySignInOptions } } }, async () => ({
    options: await webauthn.signInOptions(),
  }));

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
