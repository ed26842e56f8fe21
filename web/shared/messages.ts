// What any page says about the errors of signing in and of talking to the service. A page adds its
// own (web/account/messages.ts: enrolment, factors, step-up) in front of these.
import { WebAuthnError } from '@simplewebauthn/browser';
import { ApiError } from './api-error.js';
import { t } from './i18n.js';

/** What the person was doing while signing in, for the errors whose meaning depends on it. */
export type SignInStep = 'password' | 'code' | 'backup_code' | 'passkey' | 'other';
/** … or while adding a factor: a code that proves it, a phone number. */
export type EnrolmentStep = SignInStep | 'enrol_code' | 'phone';

/** "45 seconds", "2 minutes", "1 hour", in the page's language. */
export function waitInWords(seconds: number | undefined): string {
  if (seconds === undefined) return t('time.aLittleWhile');
  if (seconds < 60) return t('time.seconds', { count: Math.ceil(seconds) });
  if (seconds < 3600) return t('time.minutes', { count: Math.ceil(seconds / 60) });
  return t('time.hours', { count: Math.ceil(seconds / 3600) });
}

/** A sentence a person can act on, for any error the API or the browser raises. */
export function describeError(error: unknown, step: EnrolmentStep = 'other'): string {
  const enrolmentMessage =
    error instanceof ApiError ? describeEnrolmentApiError(error, step) : describeEnrolmentError(error);
  if (enrolmentMessage) return enrolmentMessage;
  const signInStep = step === 'enrol_code' || step === 'phone' ? 'other' : step;
  if (error instanceof ApiError) return describeApiError(error, signInStep);
  if (error instanceof WebAuthnError || (error instanceof Error && error.name.endsWith('Error'))) {
    const passkeyMessage = describePasskeyError(error);
    if (passkeyMessage) return passkeyMessage;
  }
  return t('errors.somethingWrong', { description: error instanceof Error ? error.message : String(error) });
}

function describeApiError(error: ApiError, step: SignInStep): string {
  const wait = waitInWords(error.retryAfterSeconds);
  switch (error.code) {
    case 'network_error':
      return t('errors.networkError');
    case 'invalid_grant':
      if (step === 'password') return t('errors.wrongPassword');
      if (step === 'passkey') return t('errors.passkeyNotVerified');
      if (step === 'backup_code') return t('errors.wrongBackupCode');
      return t('errors.wrongCode');
    case 'invalid_mfa_code':
      return t('errors.wrongCode');
    case 'login_throttled':
      return t('errors.loginThrottled', { wait });
    case 'mfa_throttled':
      return t('errors.mfaThrottled', { wait });
    case 'attempts_in_flight':
      return t('errors.attemptsInFlight', { wait });
    case 'sms_cooldown':
      return t('errors.smsCooldown', { wait });
    case 'email_cooldown':
      return t('errors.emailCooldown', { wait });
    case 'email_rate_limited':
      return t('errors.emailRateLimited', { wait });
    case 'mail_unavailable':
      return t('errors.mailUnavailable');
    case 'mail_timeout':
      return t('errors.mailTimeout');
    case 'sms_rate_limited':
      return t('errors.smsRateLimited', { wait });
    case 'sms_country_paused':
      return t('errors.smsCountryPaused', { wait });
    case 'phone_number_rejected':
      return t('errors.phoneRejected');
    case 'phone_number_not_allowed':
      return t('errors.phoneNotAllowed');
    case 'sms_unavailable':
      return t('errors.smsUnavailable');
    case 'sms_timeout':
      return t('errors.smsTimeout');
    case 'reset_rate_limited':
      return t('errors.resetRateLimited', { wait });
    case 'invalid_reset_token':
      if (/already used/.test(error.description)) return t('errors.resetLinkUsed');
      if (/expired/.test(error.description)) return t('errors.resetLinkExpired');
      return t('errors.resetLinkReplaced');
    case 'weak_password':
      // The service says why in English; the two reasons it gives have their sentence in each language.
      if (/username/.test(error.description)) return t('errors.weakPasswordUsername');
      if (/common/.test(error.description)) return t('errors.weakPasswordCommon');
      return `${capitalised(error.description)}.`;
    case 'csrf_check_failed':
      return t('errors.expiredPage');
    case 'database_unavailable':
    case 'server_error':
    case 'not_ready':
      return t('errors.serviceTrouble', { wait });
    case 'invalid_request': {
      // Asked for a factor the person does not have (offered when the service could not say which they have).
      const missing = /^mfa_type (\w+) is not enrolled/.exec(error.description)?.[1];
      if (missing && NOT_ENROLLED.has(missing)) return t(`errors.notEnrolled.${missing}`);
      return `${capitalised(error.description)}.`;
    }
    default:
      // A refusal the pages have no sentence of their own for: the service's description (in English).
      if (error.status === 429) {
        if (!error.description) return t('errors.tooManyAttempts', { wait });
        return `${capitalised(error.description)}. ${t('errors.tryAgainIn', { wait })}`;
      }
      return error.description ? `${capitalised(error.description)}.` : t('errors.refused');
  }
}

/** The factor types that have an "Your account has no …" sentence (errors.notEnrolled.<type>). */
const NOT_ENROLLED = new Set(['sms', 'totp', 'webauthn', 'email']);

/** Where passkeys work: this page at localhost when it was opened at a loopback address, else the service's name. */
function describeRefusedAddress(): string {
  const { hostname, port, pathname, search } = window.location;
  if (hostname === '127.0.0.1' || hostname === '[::1]') {
    return t('errors.passkeyAddressLocalhost', {
      address: `http://localhost${port ? `:${port}` : ''}${pathname}${search}`,
    });
  }
  return t('errors.passkeyAddress');
}

/** The browser's own refusals (WebAuthn), or undefined for anything else. */
function describePasskeyError(error: Error): string | undefined {
  const code = error instanceof WebAuthnError ? error.code : undefined;
  if (code === 'ERROR_INVALID_DOMAIN' || code === 'ERROR_INVALID_RP_ID' || error.name === 'SecurityError') {
    return describeRefusedAddress();
  }
  if (error.name === 'NotAllowedError' || error.name === 'AbortError') return t('errors.passkeyCancelled');
  if (error.name === 'NotSupportedError') return t('errors.passkeyUnsupported');
  return undefined;
}

/** "the description." → "The description" (the caller adds its own full stop). */
export function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1).replace(/\.$/, '');
}

/** The API's errors about adding a factor, or undefined for the others. */
function describeEnrolmentApiError(error: ApiError, step: EnrolmentStep): string | undefined {
  switch (error.code) {
    case 'invalid_credential':
      return t('errors.passkeyNotAdded', { description: error.description.replace(/\.$/, '') });
    case 'too_many_factors':
    case 'mfa_already_enabled':
      return `${capitalised(error.description)}.`;
    case 'invalid_phone_number':
      // "phone_number is not a possible number for its country" → "it is not a possible number …".
      return t('errors.phoneUnusable', {
        description: error.description.replace(/^phone_number /, 'it ').replace(/\.$/, ''),
      });
    case 'invalid_request':
      if (step === 'phone') return t('errors.phoneUnusable', { description: error.description.replace(/\.$/, '') });
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
    return t('errors.passkeyOnDevice');
  }
  return undefined;
}
