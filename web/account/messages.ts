// What the account page says about the errors of managing factors (enrolment, removal, step-up);
// every other error is described as on any page, by web/shared/messages.ts.
import { WebAuthnError } from '@simplewebauthn/browser';
import { ApiError } from '../shared/api-error.js';
import * as shared from '../shared/messages.js';

/** What the person was doing, for the errors whose meaning depends on it. */
export type Step = shared.SignInStep | 'enrol_code' | 'phone';

/** A sentence a person can act on, for any error the API or the browser raises. */
export function describeError(error: unknown, step: Step = 'other'): string {
  const accountMessage =
    error instanceof ApiError ? describeAccountApiError(error, step) : describeEnrolmentError(error);
  if (accountMessage) return accountMessage;
  return shared.describeError(error, step === 'enrol_code' || step === 'phone' ? 'other' : step);
}

/** The API's errors about factors and changes to them, or undefined for the others. */
function describeAccountApiError(error: ApiError, step: Step): string | undefined {
  switch (error.code) {
    case 'invalid_credential':
      return `The passkey could not be added: ${error.description}.`;
    case 'too_many_factors':
    case 'mfa_already_enabled':
      return `${shared.capitalised(error.description)}.`;
    case 'mfa_not_enabled':
      return 'Add a second factor first.';
    case 'not_found':
      return 'That factor no longer exists; the list is now up to date.';
    case 'insufficient_user_authentication':
      return 'This change needs you to confirm it is you.';
    case 'invalid_phone_number':
      // "phone_number is not a possible number for its country" → "it is not a possible number …".
      return `That phone number cannot be used: ${error.description.replace(/^phone_number /, 'it ').replace(/\.$/, '')}.`;
    case 'invalid_request':
      if (step === 'phone') return `That phone number cannot be used: ${error.description}.`;
      return undefined;
    default:
      return undefined;
  }
}

/** The browser's refusal to make a second passkey on one device for one account, or undefined. */
function describeEnrolmentError(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = error instanceof WebAuthnError ? error.code : undefined;
  if (code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED' || error.name === 'InvalidStateError') {
    return 'This device already holds a passkey for your account.';
  }
  return undefined;
}
