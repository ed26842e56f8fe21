/**
 * Every error the service answers with. `http/error-handler.ts` maps each to its status;
 * protocol errors keep the RFCs' spelling, our own are snake_case nouns for the fact.
 */
export type ErrorCode =
  // RFC 6749 §5.2 and RFC 6750 §3.1
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_client_metadata'
  | 'insufficient_scope'
  | 'not_an_operator'
  | 'sign_in_expired'
  | 'csrf_check_failed'
  | 'invalid_token'
  | 'insufficient_user_authentication'
  | 'mfa_required'
  | 'login_throttled'
  | 'mfa_throttled'
  | 'attempts_in_flight'
  // MFA state and codes
  | 'invalid_mfa_code'
  | 'invalid_credential'
  | 'mfa_already_enabled'
  | 'mfa_not_enabled'
  | 'too_many_factors'
  | 'too_few_passkeys'
  | 'no_password'
  // Recovery when every factor is lost (CONTRACT §20)
  | 'recovery_waiting'
  | 'no_recovery_request'
  // Passwords (CONTRACT §20)
  | 'weak_password'
  | 'invalid_reset_token'
  | 'reset_rate_limited'
  // Email (CONTRACT §20)
  | 'email_cooldown'
  | 'email_rate_limited'
  | 'email_address_rejected'
  | 'mail_unavailable'
  | 'email_not_verified'
  | 'mail_timeout'
  | 'recovery_rate_limited'
  // SMS delivery and its limits
  | 'sms_cooldown'
  | 'country_not_paused'
  | 'delivery_pending'
  | 'sms_rate_limited'
  | 'sms_country_paused'
  | 'invalid_phone_number'
  | 'phone_number_not_allowed'
  | 'phone_number_rejected'
  | 'sms_unavailable'
  | 'sms_timeout'
  // Admin API
  | 'username_taken'
  | 'invite_expired'
  | 'webhook_url_refused'
  // Fastify's own errors, re-shaped
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'server_error'
  | 'database_unavailable'
  | 'not_ready';

/**
 * An answer the service gives (a refusal, or a failure it names), thrown to the error handler.
 * It carries no stack: it is never logged as a failure, and capturing one cost each refused
 * request about 8 µs, as much as the rest of a cheap refusal (docs/PERFORMANCE.md).
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly description: string;
  /** For rate limits: seconds until a retry can succeed, sent as `Retry-After`. */
  readonly retryAfterSeconds?: number;
  /** Fields the answer carries beside `error` and `error_description` (an `mfa_token`, say). */
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, description: string, retryAfterSeconds?: number, details?: Record<string, unknown>) {
    const { stackTraceLimit } = Error;
    Error.stackTraceLimit = 0;
    super(`${code}: ${description}`);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ServiceError';
    this.code = code;
    this.description = description;
    this.retryAfterSeconds = retryAfterSeconds;
    this.details = details;
  }
}
