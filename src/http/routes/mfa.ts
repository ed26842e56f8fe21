import type { Enrolment } from '../../mfa/enrolment.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, MfaStatus, toMfaStatusBody } from '../schemas.js';

const errors = { 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

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
      await enrolment.disableMfa(request.principal.userId, request.principal, contextOf(request));
      return reply.code(204).send();
    },
  );
}
