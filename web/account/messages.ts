// What the account page says about the errors of managing its factors (removal, step-up); every
// other error (signing in, adding a factor) is described as on any page, by web/shared/messages.ts.
import { ApiError } from '../shared/api-error.js';
import { t } from '../shared/i18n.js';
import * as shared from '../shared/messages.js';

/** What the person was doing, for the errors whose meaning depends on it. */
export type Step = shared.EnrolmentStep;

/** A sentence a person can act on, for any error the API or the browser raises. */
export function describeError(error: unknown, step: Step = 'other'): string {
  return (error instanceof ApiError && describeAccountApiError(error)) || shared.describeError(error, step);
}

/** The API's errors about the account's factors and changes to them, or undefined for the others. */
function describeAccountApiError(error: ApiError): string | undefined {
  switch (error.code) {
    case 'mfa_not_enabled':
      return t('account.errors.mfaNotEnabled');
    case 'not_found':
      return t('account.errors.notFound');
    case 'insufficient_user_authentication':
      return t('account.errors.stepUpNeeded');
    default:
      return undefined;
  }
}
