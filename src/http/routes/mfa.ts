import { type Enrolment, statusOf } from '../../mfa/enrolment.js';
import type { AccessTokens } from '../../oauth/access-tokens.js';
import type { App, RequestGuard } from '../app-types.js';
import { bearerTokenOf } from '../authenticate.js';
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
  {
    enrolment,
    accessTokens,
    requireAccessToken,
  }: { enrolment: Enrolment; accessTokens: AccessTokens; requireAccessToken: RequestGuard },
) {
  // The hottest call: the token's standing and the user's factors come in one read, so this route
  // checks its token itself instead of through requireAccessToken (same answers, one round trip).
  app.get('/mfa/', { schema: { response: { 200: MfaStatus, ...errors } } }, async (request) => {
    const { factors } = await accessTokens.verifyAccessTokenWithFactors(bearerTokenOf(request));
    return toMfaStatusBody(statusOf(factors));
  });

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
