import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import { ServiceError } from '../errors.js';
import {
  isLanguage,
  LANGUAGES,
  type Language,
  pickLanguage,
  preferredLanguages,
  requestedLanguage,
} from '../i18n/messages.js';
import type { Store } from '../store/store.js';

/** What GET and PUT /mfa/language/ answer: the stored language (null: the browser's) and the shipped ones. */
export interface LanguageState {
  language: Language | null;
  languages: Language[];
}

/**
 * CONTRACT §22: the language of a text that a request of the user's causes (an SMS or a mail with
 * a code, a notice of their own change): the request's ui_locales, then the user's stored
 * language, then the request's Accept-Language; English when none is shipped.
 */
export async function languageFor(
  store: Store,
  userId: string,
  context: Pick<RequestContext, 'uiLocales' | 'acceptLanguage'>,
): Promise<Language> {
  // ui_locales comes first: the stored language is read only when it names none shipped.
  const requested = requestedLanguage(context.uiLocales);
  return requested ?? pickLanguage(preferredLanguages(context, await store.users.findUserLanguage(userId)));
}

/**
 * The language of a text that may follow someone else's request (a sign-in throttled, a recovery
 * asked with a stolen password): the owner's stored language, else English. The asker must not
 * choose the words the owner reads.
 */
export async function ownersLanguage(store: Store, userId: string): Promise<Language> {
  return pickLanguage([(await store.users.findUserLanguage(userId)) ?? 'en']);
}

/** The user's choice of language for the service's texts and pages (CONTRACT §22). */
export function createUserLanguages({ store, audit }: { store: Store; audit: AuditTrail }) {
  /** The user's stored language; throws `invalid_token` when the user no longer exists. */
  async function getLanguage(userId: string): Promise<LanguageState> {
    const stored = await store.users.findUserLanguage(userId);
    if (stored === undefined) throw gone();
    // A language no longer shipped is as none: the browser's.
    return { language: isLanguage(stored) ? stored : null, languages: [...LANGUAGES] };
  }

  /**
   * Stores `language`, a shipped language's code, or null to follow the browser, and records it (it
   * chooses the words of the owner's notices about others' requests). Throws 400 `invalid_request`
   * naming the shipped ones for any other, `invalid_token` when the user is gone.
   */
  async function setLanguage(userId: string, language: string | null, context: RequestContext): Promise<LanguageState> {
    if (language !== null && !isLanguage(language)) {
      throw new ServiceError(
        'invalid_request',
        `language: expected one of ${LANGUAGES.join(', ')} (ISO 639-1), or null to follow the browser`,
      );
    }
    await store.transaction(async (tx) => {
      if (!(await tx.users.setUserLanguage(userId, language))) throw gone();
      await audit.record(
        'language_changed',
        'succeeded',
        { userId, context, detail: { language: language ?? 'browser' } },
        tx,
      );
    });
    return { language, languages: [...LANGUAGES] };
  }

  return { getLanguage, setLanguage };
}

export type UserLanguages = ReturnType<typeof createUserLanguages>;

function gone(): ServiceError {
  return new ServiceError('invalid_token', 'the user of this access token no longer exists');
}
