import type { UserLanguages } from '../../users/languages.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { ErrorBody, LanguageBody, LanguageState } from '../schemas.js';

/**
 * The user's language (CONTRACT §22), which the service's texts follow when the request that
 * causes them gives no ui_locales, and the account page once they are signed in.
 * A preference, not a credential: any login of the user reads and changes it.
 */
export function languageRoutes(
  app: App,
  { languages, requireAccessToken }: { languages: UserLanguages; requireAccessToken: RequestGuard },
) {
  app.get(
    '/mfa/language/',
    { schema: { response: { 200: LanguageState, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => languages.getLanguage(request.principal.userId),
  );

  app.put(
    '/mfa/language/',
    {
      schema: { body: LanguageBody, response: { 200: LanguageState, 400: ErrorBody, 401: ErrorBody } },
      onRequest: requireAccessToken,
    },
    async (request) => languages.setLanguage(request.principal.userId, request.body.language, contextOf(request)),
  );
}
