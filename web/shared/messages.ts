// What any page says about the errors of signing in and of talking to the service. A page adds its
// own (web/account/messages.ts: enrolment, factors, step-up) in front of these.
import { WebAuthnError } from '@simplewebauthn/browser';
import { ApiError } from './api-error.js';

/** What the person was doing while signing in, for the errors whose meaning depends on it. */
export type SignInStep = 'password' | 'code' | 'backup_code' | 'passkey' | 'other';
/** … or while adding a factor: a code that proves it, a phone number. */
export type EnrolmentStep = SignInStep | 'enrol_code' | 'phone';

const FACTOR_WORDS: Record<string, string> = {
  sms: 'phone for SMS codes',
  totp: 'authenticator app',
  webauthn: 'passkey',
  email: 'codes by email',
};

/** "45 seconds", "2 minutes", "1 hour". */
export function waitInWords(seconds: number | undefined): string {
  if (seconds === undefined) return 'a little while';
  if (seconds < 60) return plural(Math.ceil(seconds), 'second');
  if (seconds < 3600) return plural(Math.ceil(seconds / 60), 'minute');
  return plural(Math.ceil(seconds / 3600), 'hour');
}

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
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
  return `Something went wrong: ${error instanceof Error ? error.message : String(error)}`;
}

function describeApiError(error: ApiError, step: SignInStep): string {
  const wait = waitInWords(error.retryAfterSeconds);
  switch (error.code) {
    case 'network_error':
      return 'The service could not be reached. Check your connection and try again.';
    case 'invalid_grant':
      if (step === 'password') return 'The username or password is wrong.';
      if (step === 'passkey') return 'The passkey could not be verified. Try again, or choose another way.';
      if (step === 'backup_code') return 'That backup code is wrong or was already used.';
      return 'That code is wrong, expired or already used. Check it and try again.';
    case 'invalid_mfa_code':
      return 'That code is wrong, expired or already used. Check it and try again.';
    case 'login_throttled':
      return `Too many failed sign-ins. Try again in ${wait}.`;
    case 'mfa_throttled':
      return `Too many wrong codes. Try again in ${wait}.`;
    case 'sms_cooldown':
      return `A code was sent moments ago. You can ask for another in ${wait}; the one sent still works.`;
    case 'email_cooldown':
      return `A code was mailed moments ago. You can ask for another in ${wait}; the one mailed still works.`;
    case 'email_rate_limited':
      return `Too many codes were mailed lately. Try again in ${wait}.`;
    case 'mail_unavailable':
      return 'The email could not be sent. Try again in a few minutes.';
    case 'sms_rate_limited':
      return `Too many codes were sent lately. Try again in ${wait}.`;
    case 'phone_number_rejected':
      return 'The SMS provider refused this number. Check it, or use another phone.';
    case 'phone_number_not_allowed':
      return 'This service does not send SMS to that country.';
    case 'sms_unavailable':
      return 'The SMS could not be sent: the provider failed. Try again in a minute.';
    case 'sms_timeout':
      return 'The SMS provider did not answer in time. The code may still arrive; wait a minute before asking for another.';
    case 'reset_rate_limited':
      return `Several links were asked for this name lately. Use the newest mail, or try again in ${wait}.`;
    case 'invalid_reset_token':
      if (/already used/.test(error.description))
        return 'This link was already used. Ask for a new one with “Forgot password?” when you sign in.';
      if (/expired/.test(error.description))
        return 'This link has expired: links work for 30 minutes. Ask for a new one with “Forgot password?” when you sign in.';
      return 'This link no longer works (a newer link replaces it, and a changed email address ends it). Ask for a new one with “Forgot password?” when you sign in.';
    case 'database_unavailable':
    case 'server_error':
    case 'not_ready':
      return `The service is having trouble right now. Try again in ${wait}.`;
    case 'invalid_request': {
      // Asked for a factor the person does not have (offered when the service could not say which they have).
      const missing = /^mfa_type (\w+) is not enrolled/.exec(error.description)?.[1];
      if (missing) return `Your account has no ${FACTOR_WORDS[missing] ?? missing}. Choose another way to verify.`;
      return `${capitalised(error.description)}.`;
    }
    default:
      if (error.status === 429)
        return `${capitalised(error.description || 'too many attempts')}. Try again in ${wait}.`;
      return `${capitalised(error.description || 'the service refused the request')}.`;
  }
}

/** Where passkeys work: this page at localhost when it was opened at a loopback address, else the service's name. */
function betterAddress(): string {
  const { hostname, port, pathname, search } = window.location;
  if (hostname === '127.0.0.1' || hostname === '[::1]') {
    return `Open this page at http://localhost${port ? `:${port}` : ''}${pathname}${search} instead.`;
  }
  return 'Open this page at the address the service was set up with (its domain name).';
}

/** The browser's own refusals (WebAuthn), or undefined for anything else. */
function describePasskeyError(error: Error): string | undefined {
  const code = error instanceof WebAuthnError ? error.code : undefined;
  if (code === 'ERROR_INVALID_DOMAIN' || code === 'ERROR_INVALID_RP_ID' || error.name === 'SecurityError') {
    return `The browser refused passkeys on this address: they need a domain name, not an IP address, and HTTPS anywhere but localhost. ${betterAddress()}`;
  }
  if (error.name === 'NotAllowedError' || error.name === 'AbortError') {
    return 'The passkey request was cancelled or timed out. Try again when you are ready.';
  }
  if (error.name === 'NotSupportedError') return 'This browser or device cannot make a passkey of a supported kind.';
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
      return `The passkey could not be added: ${error.description}.`;
    case 'too_many_factors':
    case 'mfa_already_enabled':
      return `${capitalised(error.description)}.`;
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
