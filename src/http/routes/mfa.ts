import type { Enrolment } from '../../mfa/enrolment.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  FactorBody,
  FactorIdParams,
  FactorList,
  FactorUpdateBody,
  MfaStatus,
  toFactorBody,
  toMfaStatusBody,
} from '../schemas.js';

const errors = { 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };

/** The MFA status and the user's factors, whatever their type (CONTRACT §4 and §10). */
export function mfaRoutes(
  app: App,
  { enrolment, requireAccessToken }: { enrolment: Enrolment; requireAccessToken: RequestGuard },
) {
  app.get(
    '/mfa/',
    { schema: { response: { 200: MfaStatus, ...errors } }, onRequest: requireAccessToken },
    async (request) => toMfaStatusBody(await enrolment.getStatus(request.principal.userId)),
  );

  app.delete(
    '/mfa/',
    { schema: { response: { 204: {}, ...errors } }, onRequest: requireAccessToken },
    async (request, reply) => {
      await enrolment.disableMfa(request.principal, contextOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    '/mfa/factors/',
    { schema: { response: { 200: FactorList, ...errors } }, onRequest: requireAccessToken },
    async (request) => ({ factors: (await enrolment.listFactors(request.principal.userId)).map(toFactorBody) }),
  );

  app.patch(
    '/mfa/factors/:id/',
    {
      schema: {
        params: FactorIdParams,
        body: FactorUpdateBody,
        response: { 200: FactorBody, 400: ErrorBody, ...errors },
      },
      onRequest: requireAccessToken,
    },
    async (request) =>
      toFactorBody(
        await enrolment.updateFactor(
          request.principal,
          request.params.id,
          { name: request.body.name, isDefault: request.body.is_default },
          contextOf(request),
        ),
      ),
  );

  app.delete(
    '/mfa/factors/:id/',
    { schema: { params: FactorIdParams, response: { 204: {}, ...errors } }, onRequest: requireAccessToken },
    async (request, reply) => {
      await enrolment.removeFactor(request.principal, request.params.id, contextOf(request));
      return reply.code(204).send();
    },
  );
}
