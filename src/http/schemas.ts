import { type Static, Type } from '@sinclair/typebox';
import { LANGUAGES } from '../i18n/messages.js';
import type { MfaStatus as MfaStatusRecord } from '../mfa/enrolment.js';
import { FACTOR_NAME_PATTERN, FACTOR_TYPES, toFactorType } from '../mfa/factors/factor.js';
import { type PasskeyDetails, passkeyDetails } from '../mfa/factors/webauthn.js';
import { PHONE_NUMBER_EXAMPLES } from '../mfa/phone-numbers.js';
import type { TokenResponse as TokenResponseRecord } from '../oauth/token-issuer.js';
import type { Factor } from '../store/mfa-factors.js';
import { USERNAME_PATTERN } from '../users/accounts.js';
import { EMAIL_MAX_LENGTH, EMAIL_PATTERN } from '../users/emails.js';
import { PASSWORD_LENGTH } from '../users/password-policy.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../webhooks/outbox.js';

// Wire names stay as the seed and the RFCs spell them; routes turn records into these shapes.

export const ErrorBody = Type.Object({ error: Type.String(), error_description: Type.String() });

const FactorTypeSchema = Type.Union(FACTOR_TYPES.map((type) => Type.Literal(type)));

export const MfaStatus = Type.Object({
  enabled: Type.Boolean(),
  challenge_type: Type.Union([FactorTypeSchema, Type.Literal('')]),
  phone_number: Type.String(),
});

/** Whether EMAIL_FACTOR is on, and the user's verified address ("" when none). */
export const EmailFactorOffer = Type.Object({ offered: Type.Boolean(), email: Type.String() });

/** CONTRACT §20: an email-factor enrolment started; `email` is where its code went. */
export const EmailFactorStart = Type.Object({ ...MfaStatus.properties, email: Type.String() });

const FactorName = Type.String({
  pattern: FACTOR_NAME_PATTERN,
  description: 'a name of 1 to 64 printable characters, e.g. "Work phone"',
});

export const FactorBody = Type.Object({
  id: Type.String(),
  type: FactorTypeSchema,
  name: Type.String(),
  is_default: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  phone_number: Type.Optional(Type.String()),
  /** Passkeys (CONTRACT §19): the authenticator's name when known, synced or device-bound, able to sign in alone. */
  authenticator: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  synced: Type.Optional(Type.Boolean()),
  can_sign_in_alone: Type.Optional(Type.Boolean()),
});

export const FactorList = Type.Object({ factors: Type.Array(FactorBody) });

export const FactorIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const FactorUpdateBody = Type.Object(
  {
    name: Type.Optional(FactorName),
    is_default: Type.Optional(
      Type.Literal(true, { description: 'true (the default is changed by making another factor the default)' }),
    ),
  },
  { minProperties: 1, additionalProperties: false },
);

export const TotpRequestBody = Type.Object({ name: Type.Optional(FactorName) });

/** WebAuthn Level 3 JSON options, passed through as the library made them. */
const WebauthnOptions = Type.Object({}, { additionalProperties: true });

export const WebauthnRequestBody = Type.Object({ name: Type.Optional(FactorName) });

export const WebauthnRegistrationOptions = Type.Object({ options: WebauthnOptions });

export const WebauthnVerifyBody = Type.Object({
  credential: Type.Object(
    {},
    { additionalProperties: true, description: 'the RegistrationResponseJSON the browser made' },
  ),
  name: Type.Optional(FactorName),
});

export const TotpEnrolment = Type.Object({
  factor_id: Type.String(),
  secret: Type.String({ description: 'base32, without padding' }),
  otpauth_uri: Type.String(),
});

// A field's description is what a 400 tells the caller to send instead (http/error-handler.ts).

export const SmsRequestBody = Type.Object({
  phone_number: Type.String({
    pattern: '^[0-9]{7,15}$',
    description: `a string of 7 to 15 digits, country code first, without + or spaces, e.g. ${PHONE_NUMBER_EXAMPLES}`,
  }),
});

const MfaCode = Type.String({ pattern: '^[0-9]{6}$', description: 'a string of exactly 6 digits, e.g. "123456"' });
const BackupCode = Type.String({ pattern: '^[0-9]{12}$', description: 'a string of exactly 12 digits' });

export const SmsVerifyBody = Type.Object({ mfa_code: MfaCode });
// RFC 6749 §3.3: scope-tokens of %x21 / %x23-5B / %x5D-7E, separated by single spaces.
const SCOPE_TOKEN = '[\\x21\\x23-\\x5B\\x5D-\\x7E]+';

const ClientCredentialFields = {
  client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  client_secret: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
};

/** Every field is a string, whether the body came as JSON or as a form (RFC 6749 §4.3.2). */
export const TokenRequestBody = Type.Object({
  grant_type: Type.String({ maxLength: 200 }),
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 150 })),
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  mfa_code: Type.Optional(MfaCode),
  backup_code: Type.Optional(BackupCode),
  mfa_type: Type.Optional(
    Type.String({ maxLength: 20, description: `the second factor to ask for: ${FACTOR_TYPES.join(', ')}` }),
  ),
  acr_values: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9:._-]+( [A-Za-z0-9:._-]+)*$',
      maxLength: 200,
      description: 'space-separated acr values in order of preference (RFC 9470), e.g. "phr aal2"',
    }),
  ),
  max_age: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,9}$', description: 'the most seconds since the user authenticated (RFC 9470)' }),
  ),
  mfa_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  otp: Type.Optional(MfaCode),
  webauthn_response: Type.Optional(
    Type.Union([Type.Object({}, { additionalProperties: true }), Type.String({ maxLength: 16_384 })], {
      description: 'the AuthenticationResponseJSON the browser made: an object in a JSON body, a JSON string in a form',
    }),
  ),
  recovery_code: Type.Optional(BackupCode),
  scope: Type.Optional(
    Type.String({
      pattern: `^(${SCOPE_TOKEN}( ${SCOPE_TOKEN})*)?$`,
      maxLength: 1000,
      description: 'space-separated scope tokens of printable ASCII (RFC 6749 §3.3), e.g. "read write"',
    }),
  ),
  refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  // RFC 6749 §4.1.3 and RFC 7636 §4.5: the authorization_code grant.
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  redirect_uri: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
  code_verifier: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'the PKCE code_verifier (RFC 7636), 43 to 128 characters',
    }),
  ),
  ...ClientCredentialFields,
});

/** RFC 7009 §2.1 and RFC 7662 §2.1: the token, a hint we may ignore, and client_secret_post fields. */
export const TokenBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 4096 }),
  token_type_hint: Type.Optional(Type.String({ maxLength: 100 })),
  ...ClientCredentialFields,
});

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  expires_in: Type.Integer(),
  token_type: Type.Literal('Bearer'),
  scope: Type.String(),
  refresh_token: Type.String(),
  /** OpenID Connect Core §3.1.3.3: with the authorization_code grant when openid was granted. */
  id_token: Type.Optional(Type.String()),
});

export const IntrospectionResponse = Type.Object({
  active: Type.Boolean(),
  token_type: Type.Optional(Type.String()),
  sub: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
  iat: Type.Optional(Type.Integer()),
  exp: Type.Optional(Type.Integer()),
  jti: Type.Optional(Type.String()),
  amr: Type.Optional(Type.Array(Type.String())),
  acr: Type.Optional(Type.String()),
  auth_time: Type.Optional(Type.Integer()),
  iss: Type.Optional(Type.String()),
});

export const MfaRequiredResponse = Type.Object({
  mfa_required: Type.Literal(true),
  mfa_type: FactorTypeSchema,
  mfa_types: Type.Optional(Type.Array(FactorTypeSchema)),
  webauthn: Type.Optional(WebauthnOptions),
});

/** CONTRACT §14: the 403 a client registered with mfa_challenge "error" gets instead. */
export const MfaRequiredError = Type.Object({
  error: Type.String(),
  error_description: Type.String(),
  mfa_token: Type.Optional(Type.String()),
  mfa_type: Type.Optional(FactorTypeSchema),
  mfa_types: Type.Optional(Type.Array(FactorTypeSchema)),
  webauthn: Type.Optional(WebauthnOptions),
});

const NewPassword = Type.String({
  minLength: PASSWORD_LENGTH.min,
  maxLength: PASSWORD_LENGTH.max,
  description:
    'a string of 8 to 1024 characters, neither a common or breached password nor the username (400 weak_password otherwise)',
});

const Email = Type.String({
  pattern: EMAIL_PATTERN,
  maxLength: EMAIL_MAX_LENGTH,
  description: 'an email address (name@example.com), at most 254 characters',
});

export const CreateUserBody = Type.Object({
  username: Type.String({ pattern: USERNAME_PATTERN, description: 'a string of 1 to 150 letters, digits or @.+_-' }),
  /** Absent: the account signs in with passkeys, the first made from the answer's invite_url (CONTRACT §19). */
  password: Type.Optional(NewPassword),
  /** CONTRACT §20: an address an operator gives counts as verified. */
  email: Type.Optional(Email),
});

/** CONTRACT §20: the user's address; `email` is "" when there is none. */
export const EmailState = Type.Object({ email: Type.String(), verified: Type.Boolean() });

export const EmailRequestBody = Type.Object({ email: Email });

export const EmailVerifyBody = Type.Object({
  mfa_code: Type.String({ pattern: '^[0-9]{6}$', description: 'the 6 digits mailed to the address, as a string' }),
});

const LANGUAGE_CHOICE = `one of ${LANGUAGES.join(', ')} (ISO 639-1), or null to follow the browser`;

/** CONTRACT §22: the user's stored language (null: the browser's), and the languages shipped. */
export const LanguageState = Type.Object({
  language: Type.Union([Type.String({ enum: [...LANGUAGES] }), Type.Null()], {
    description: 'the language the service writes to the user in; null: the browser’s (Accept-Language)',
  }),
  languages: Type.Array(Type.String(), { description: 'the languages shipped, by ISO 639-1 code' }),
});

export const LanguageBody = Type.Object(
  {
    language: Type.Union(
      [
        Type.String({ enum: [...LANGUAGES], description: LANGUAGE_CHOICE }),
        Type.Null({ description: LANGUAGE_CHOICE }),
      ],
      { description: LANGUAGE_CHOICE },
    ),
  },
  { additionalProperties: false },
);

/** CONTRACT §20: recovery when every factor is lost, asked and completed with the password alone. */
export const RecoveryRequestBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 150, description: 'the username, as for the password grant' }),
  password: Type.String({ minLength: 1, maxLength: 1024, description: "the account's password" }),
});

const RecoveryState = Type.Union(
  [Type.Literal('none'), Type.Literal('waiting'), Type.Literal('cancelled'), Type.Literal('completed')],
  { description: 'none: never asked; waiting: until ready_at; cancelled; completed' },
);

export const RecoveryRequestStatus = Type.Object({
  state: RecoveryState,
  ready_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'when the request may complete; null when none was made',
  }),
});

/** 409 `recovery_waiting` says when (`ready_at`); `no_recovery_request` and `mfa_not_enabled` do not. */
export const RecoveryConflict = Type.Object({
  error: Type.String(),
  error_description: Type.String(),
  ready_at: Type.Optional(Type.String({ format: 'date-time' })),
});

export const RecoveryWaiting = Type.Object({
  state: Type.Literal('waiting'),
  ready_at: Type.String({ format: 'date-time' }),
});

/** CONTRACT §20: an operator sets a user's password; every login of the user ends. */
export const SetPasswordBody = Type.Object({
  password: NewPassword,
});

export const CreatedUser = Type.Object({
  id: Type.String(),
  username: Type.String(),
  email: Type.Optional(Type.String()),
  invite_url: Type.Optional(Type.String()),
});

export const InviteCreated = Type.Object({
  invite_url: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
});

/** What the account page sends with an invite from its link (CONTRACT §19). */
export const InvitePasskeyOptionsBody = Type.Object({
  invite: Type.String({ minLength: 1, maxLength: 200, description: 'the token of the invite link' }),
  name: Type.Optional(FactorName),
});

export const InvitePasskeyBody = Type.Object({
  invite: Type.String({ minLength: 1, maxLength: 200, description: 'the token of the invite link' }),
  credential: Type.Object({}, { additionalProperties: true, description: 'the RegistrationResponseJSON' }),
  name: Type.Optional(FactorName),
});

export const InviteAccepted = Type.Object({
  ...TokenResponse.properties,
  username: Type.String(),
});

export const PasskeySignInOptions = Type.Object({ options: WebauthnOptions });

export const PasswordState = Type.Object({ has_password: Type.Boolean() });

/** CONTRACT §19: the browsers that skip the second step at the hosted sign-in, the last used first. */
export const RememberedDeviceList = Type.Object({
  devices: Type.Array(
    Type.Object({
      id: Type.String(),
      browser: Type.String({ description: 'the browser and system its User-Agent named, e.g. "Chrome on Linux"' }),
      created_at: Type.String({ format: 'date-time' }),
      last_used_at: Type.String({ format: 'date-time' }),
      expires_at: Type.String({ format: 'date-time' }),
    }),
  ),
});

export const DeviceIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const PasswordChangeBody = Type.Object({
  current_password: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1024, description: 'the password now (absent when the account has none)' }),
  ),
  new_password: NewPassword,
});

/** CONTRACT §20: "forgot password" names the account by one of these. */
export const PasswordResetRequestBody = Type.Object({
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 150, description: 'the username (or send email)' })),
  email: Type.Optional(Email),
});

/** The same `{}` whether or not an account was found. */
export const PasswordResetAccepted = Type.Object({}, { additionalProperties: false });

export const PasswordResetBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'the token of the link mailed (?token=…)' }),
  new_password: NewPassword,
});

// No NUL in a name: PostgreSQL text cannot store one, so both dialects refuse it alike.
const MfaChallengeStyle = Type.Union([Type.Literal('seed'), Type.Literal('error')], {
  description: '"seed" (200 {mfa_required}) or "error" (403 mfa_required with an mfa_token)',
});

/** CONTRACT §18's client metadata, as the admin API takes it (checked further by oauth/client-metadata.ts). */
const ClientMetadataFields = {
  redirect_uris: Type.Optional(
    Type.Array(Type.String({ maxLength: 2000 }), {
      maxItems: 20,
      description:
        'an array of exact redirect URIs: https, http to a loopback host (any port), or a private-use scheme such as com.example.app:/callback',
    }),
  ),
  post_logout_redirect_uris: Type.Optional(
    Type.Array(Type.String({ maxLength: 2000 }), {
      maxItems: 20,
      description: 'an array of exact URIs that RP-initiated logout may return to',
    }),
  ),
  token_endpoint_auth_method: Type.Optional(
    Type.String({ description: 'client_secret_basic, client_secret_post, or none (a public client: no secret)' }),
  ),
  allowed_scopes: Type.Optional(
    Type.String({
      maxLength: 1000,
      description: 'a string of space-separated scopes, e.g. "openid profile offline_access"',
    }),
  ),
  web_origins: Type.Optional(
    Type.Array(Type.String({ maxLength: 300 }), {
      maxItems: 20,
      description: 'an array of origins (https://app.example.com) whose browsers may call the token endpoint',
    }),
  ),
  id_token_signed_response_alg: Type.Optional(Type.String({ description: 'RS256, ES256 or EdDSA' })),
  mfa_policy: Type.Optional(
    Type.String({ description: 'optional, or required (a user without a second factor adds one while signing in)' }),
  ),
  remember_device_days: Type.Optional(
    Type.Integer({
      description:
        'days a browser may skip the second step at the hosted sign-in once the person ticks "this device"; 0 (the default) never offers it',
    }),
  ),
};

const ClientName = Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000]+$' });

export const CreateClientBody = Type.Object({
  name: ClientName,
  mfa_challenge: Type.Optional(MfaChallengeStyle),
  ...ClientMetadataFields,
});

export const UpdateClientBody = Type.Object(
  {
    name: Type.Optional(ClientName),
    mfa_challenge: Type.Optional(MfaChallengeStyle),
    ...ClientMetadataFields,
  },
  { minProperties: 1, description: 'an object with at least one of the client’s settings to change' },
);

export const ClientIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

export const ClientSettings = Type.Object({
  client_id: Type.String(),
  name: Type.String(),
  mfa_challenge: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  allowed_scopes: Type.String(),
  web_origins: Type.Array(Type.String()),
  id_token_signed_response_alg: Type.String(),
  mfa_policy: Type.String(),
  remember_device_days: Type.Integer(),
});

/** The settings, and the secret when one was just made (shown this once). */
export const ClientWithSecret = Type.Object({
  ...ClientSettings.properties,
  client_secret: Type.Optional(Type.String()),
});

export const ClientList = Type.Object({ clients: Type.Array(ClientSettings) });

export const ClientSecret = Type.Object({ client_id: Type.String(), client_secret: Type.String() });

export const BackupCodesResponse = Type.Object({
  backup_codes: Type.Array(Type.String({ pattern: '^[0-9]{12}$' }), { minItems: 10, maxItems: 10 }),
});

export const BackupCodesRemaining = Type.Object({ remaining: Type.Integer({ minimum: 0 }) });

export const UserIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const UserLookupQuery = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 150, description: 'the username to find (any case)' }),
});

export const UserSummary = Type.Object({ id: Type.String(), username: Type.String() });

/** CONTRACT §21: the console's user search, a page at a time. */
export const UserSearchQuery = Type.Object({
  q: Type.Optional(
    Type.String({
      maxLength: 320,
      description: 'the start of the username, or with an @ the start of the email address (any case); none: everyone',
    }),
  ),
  after: Type.Optional(
    Type.String({ maxLength: 320, description: 'the next_after of the previous page, for the page after it' }),
  ),
  // Query strings stay strings (no coercion): whole numbers are checked by their digits.
  limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'users per page, 1 to 100 (20)' })),
});

const UserSummaryFields = {
  id: Type.String(),
  username: Type.String(),
  email: Type.Optional(Type.String()),
  mfa_enabled: Type.Boolean(),
  is_operator: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
};

export const UserSearchPage = Type.Object({
  users: Type.Array(Type.Object(UserSummaryFields)),
  next_after: Type.Optional(Type.String({ description: 'present when there may be more: send it as `after`' })),
});

/** CONTRACT §21: one user as the console shows them. */
export const UserDetail = Type.Object({
  ...UserSummaryFields,
  locked_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'while wrong passwords or second-factor guesses hold the user’s sign-ins back: until when',
  }),
  language: Type.Union([Type.String(), Type.Null()], {
    description: 'the user’s stored language (ISO 639-1); null: they follow the browser (CONTRACT §22)',
  }),
  factors: Type.Array(
    Type.Object({
      id: Type.String(),
      type: Type.String({ description: 'sms, totp or webauthn' }),
      name: Type.String(),
      is_default: Type.Boolean(),
      created_at: Type.String({ format: 'date-time' }),
      last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
  sessions: Type.Array(
    Type.Object({
      id: Type.String({ description: 'the login (refresh-token family)' }),
      client_id: Type.String(),
      client_name: Type.Union([Type.String(), Type.Null()]),
      amr: Type.Array(Type.String()),
      acr: Type.String(),
      signed_in_at: Type.String({ format: 'date-time' }),
      last_refreshed_at: Type.String({ format: 'date-time' }),
      expires_at: Type.String({ format: 'date-time' }),
      browser_sign_in: Type.Boolean({ description: 'true when it came through the hosted sign-in' }),
    }),
    { description: 'the logins that may still be refreshed, the latest first (at most 100)' },
  ),
  remembered_devices: Type.Array(
    Type.Object({
      id: Type.String(),
      browser: Type.String(),
      created_at: Type.String({ format: 'date-time' }),
      last_used_at: Type.String({ format: 'date-time' }),
      expires_at: Type.String({ format: 'date-time' }),
    }),
  ),
});

/** CONTRACT §21: the signing keys, public facts only. */
export const SigningKeyList = Type.Object({
  keys: Type.Array(
    Type.Object({
      kid: Type.String(),
      alg: Type.String(),
      created_at: Type.String({ format: 'date-time' }),
      state: Type.String({
        description:
          'active (the newest of its alg: it signs), published (in the JWKS while tokens it signed may live) or retired',
      }),
    }),
    { description: 'newest first' },
  ),
});

export const CountryParams = Type.Object({
  country: Type.String({ pattern: '^[A-Z]{2}$', description: 'an ISO 3166 country code in capitals, e.g. "US"' }),
});

/** CONTRACT §15, §21: the enrolment SMS budgets by country, and the pauses. */
export const SmsCountries = Type.Object({
  countries: Type.Array(
    Type.Object({
      country: Type.String(),
      sent_this_hour: Type.Integer(),
      hourly_limit: Type.Integer(),
      average_per_hour: Type.Number(),
      pause_threshold: Type.Integer(),
      paused_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      resumed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
});

export const StatsQuery = Type.Object({
  hours: Type.Optional(
    Type.String({
      pattern: '^([1-9]|[1-9][0-9]|1[0-5][0-9]|16[0-8])$',
      description: 'how many clock hours back, 1 to 168 (the last 7 days, the default)',
    }),
  ),
});

export const SmsStats = Type.Object({
  since: Type.String({ format: 'date-time' }),
  rows: Type.Array(Type.Object({ hour: Type.String(), country: Type.String(), sends: Type.Integer() })),
});

export const SignInStats = Type.Object({
  since: Type.String({ format: 'date-time' }),
  rows: Type.Array(
    Type.Object({
      hour: Type.String(),
      succeeded: Type.Integer(),
      refused: Type.Integer(),
      throttled: Type.Integer(),
    }),
  ),
});

export const SecurityEvents = Type.Object({
  events: Type.Array(
    Type.Object({
      id: Type.String(),
      occurred_at: Type.String(),
      type: Type.String(),
      outcome: Type.String(),
      client_address: Type.Union([Type.String(), Type.Null()]),
      detail: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
    }),
  ),
});

const WebhookEventTypeSchema = Type.Unsafe<WebhookEventType>({
  type: 'string',
  enum: [...WEBHOOK_EVENT_TYPES],
  description: `one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
});

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2000,
      pattern: '^[^\\u0000]+$',
      description: 'an absolute https URL, e.g. "https://hooks.example.com/mfa"',
    }),
    events: Type.Optional(Type.Array(WebhookEventTypeSchema, { minItems: 1, maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const WebhookEndpointBody = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
});

export const CreatedWebhook = Type.Composite([WebhookEndpointBody, Type.Object({ secret: Type.String() })]);

export const WebhookList = Type.Object({ webhooks: Type.Array(WebhookEndpointBody) });

export const WebhookIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const DeliveryParams = Type.Object({
  id: Type.String({ maxLength: 100 }),
  event_id: Type.String({
    maxLength: 100,
    pattern: '^[^\\u0000]+$',
    description: 'the event_id of GET /admin/webhooks/{id}/deliveries',
  }),
});

export const WebhookDeliveries = Type.Object({
  deliveries: Type.Array(
    Type.Object({
      event_id: Type.String({ description: 'the webhook-id the receiver saw' }),
      type: Type.String(),
      attempt: Type.Integer({ minimum: 1 }),
      status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('pending')]),
      response_status: Type.Union([Type.Integer(), Type.Null()]),
      attempted_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
});

export const HealthStatus = Type.Object({ status: Type.String() });

/** RFC 8414 §2 authorization server metadata; open, so that a field added to the route is never dropped. */
export const AuthorizationServerMetadata = Type.Object(
  {
    issuer: Type.String(),
    token_endpoint: Type.String(),
    jwks_uri: Type.String(),
    revocation_endpoint: Type.String(),
    introspection_endpoint: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
    acr_values_supported: Type.Array(Type.String()),
  },
  { additionalProperties: true },
);

/**
 * RFC 7517 §5 JWK set. Closed on purpose: the serializer writes only public members (RFC 7518 §6:
 * `crv`, `x`, `y` of EC and OKP keys; `n`, `e` of RSA ones), so a private one (`d`, `p`, `q` …)
 * could never reach the answer even if a key object carried it.
 */
export const JsonWebKeySet = Type.Object({
  keys: Type.Array(
    Type.Object({
      kty: Type.Optional(Type.String()),
      crv: Type.Optional(Type.String()),
      x: Type.Optional(Type.String()),
      y: Type.Optional(Type.String()),
      n: Type.Optional(Type.String()),
      e: Type.Optional(Type.String()),
      kid: Type.Optional(Type.String()),
      alg: Type.Optional(Type.String()),
      use: Type.Optional(Type.String()),
    }),
  ),
});

/** A rotation makes a key of every algorithm; `kid` is the new EdDSA key's, the one access tokens name. */
export const SigningKeyCreated = Type.Object({ kid: Type.String() });

export function toMfaStatusBody(status: MfaStatusRecord): Static<typeof MfaStatus> {
  return { enabled: status.isEnabled, challenge_type: status.challengeType, phone_number: status.phoneNumber };
}

export function toTokenResponseBody(tokens: TokenResponseRecord & { idToken?: string }): Static<typeof TokenResponse> {
  return {
    access_token: tokens.accessToken,
    expires_in: tokens.expiresInSeconds,
    token_type: 'Bearer',
    scope: tokens.scope,
    refresh_token: tokens.refreshToken,
    ...(tokens.idToken === undefined ? {} : { id_token: tokens.idToken }),
  };
}

export function toFactorBody(factor: Factor): Static<typeof FactorBody> {
  return {
    id: factor.id,
    type: toFactorType(factor.type),
    name: factor.name,
    is_default: factor.isDefault,
    created_at: (factor.verifiedAt ?? factor.createdAt).toISOString(),
    last_used_at: factor.lastUsedAt?.toISOString() ?? null,
    ...(factor.phoneNumber === undefined ? {} : { phone_number: factor.phoneNumber }),
    ...(factor.type === 'webauthn' ? passkeyBody(passkeyDetails(factor)) : {}),
  };
}

function passkeyBody(details: PasskeyDetails) {
  return {
    authenticator: details.authenticator ?? null,
    synced: details.isSynced,
    can_sign_in_alone: details.canSignInAlone,
  };
}

// The hosted sign-in's API (CONTRACT §18): what the page at /sign-in/ calls, same origin only.

export const SignInIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const SignInPasswordBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 150, description: 'the username' }),
  password: Type.String({ minLength: 1, maxLength: 1024, description: 'the password' }),
});

/** CONTRACT §19: a passkey alone, instead of the password: the AuthenticationResponseJSON. */
export const SignInPasskeyBody = Type.Object({
  webauthn_response: Type.Object({}, { additionalProperties: true, description: 'the AuthenticationResponseJSON' }),
});

export const SignInSecondFactorBody = Type.Object({
  mfa_type: Type.Optional(FactorTypeSchema),
  mfa_code: Type.Optional(MfaCode),
  backup_code: Type.Optional(BackupCode),
  webauthn_response: Type.Optional(Type.Object({}, { additionalProperties: true })),
  remember_device: Type.Optional(
    Type.Boolean({
      description: 'true: this browser skips the second step from now on, for the days the app allows (CONTRACT §19)',
    }),
  ),
});

/** What the page shows next, or where it sends the browser (`location`). */
export const SignInAnswer = Type.Object({
  step: Type.Optional(Type.Union([Type.Literal('password'), Type.Literal('second_factor'), Type.Literal('enrol')])),
  username: Type.Optional(Type.String()),
  mfa_type: Type.Optional(FactorTypeSchema),
  mfa_types: Type.Optional(Type.Array(FactorTypeSchema)),
  webauthn: Type.Optional(WebauthnOptions),
  factor_types: Type.Optional(Type.Array(FactorTypeSchema)),
  /** The second step may be skipped in this browser for so many days, if the person asks. */
  remember_device_days: Type.Optional(Type.Integer()),
  location: Type.Optional(Type.String()),
  /** The sign-in used a backup code: how many unused ones are left, for the page to say. */
  backup_codes_left: Type.Optional(Type.Integer()),
  /** The first factor was just added: the first backup codes, shown once before going back to the app. */
  backup_codes: Type.Optional(Type.Array(Type.String())),
});

export const SignInDescription = Type.Object({
  ...SignInAnswer.properties,
  service_name: Type.String(),
  client_name: Type.String(),
  csrf_token: Type.String(),
  login_hint: Type.Optional(Type.String()),
  ui_locales: Type.Optional(Type.String()),
  language: Type.String({
    enum: [...LANGUAGES],
    description:
      'the language the server chose for the page (CONTRACT §22): ui_locales, else the signed-in user’s stored language, else Accept-Language',
  }),
});

export const UserInfo = Type.Object({
  sub: Type.String(),
  preferred_username: Type.String(),
  locale: Type.Optional(Type.String({ description: 'the user’s stored language (BCP 47), with the profile scope' })),
});
