import { type Server, STATUS_CODES } from 'node:http';
import type {
  FastifyError,
  FastifyHttpOptions,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
} from 'fastify';
import { type ErrorCode, ServiceError } from '../errors.js';
import { StepUpRequired } from '../logins/step-up.js';
import { isDatabaseUnavailable } from '../store/database.js';

/** The only code → status table; a new ErrorCode without a status does not compile. */
const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  invalid_client_metadata: 400,
  insufficient_scope: 403,
  not_an_operator: 403,
  sign_in_expired: 410,
  csrf_check_failed: 403,
  invalid_token: 401,
  insufficient_user_authentication: 401,
  mfa_required: 403,
  login_throttled: 429,
  mfa_throttled: 429,
  attempts_in_flight: 429,
  invalid_mfa_code: 400,
  invalid_credential: 400,
  mfa_already_enabled: 409,
  mfa_not_enabled: 409,
  recovery_waiting: 409,
  no_recovery_request: 409,
  too_many_factors: 409,
  too_few_passkeys: 409,
  no_password: 409,
  country_not_paused: 409,
  delivery_pending: 409,
  weak_password: 400,
  invalid_reset_token: 400,
  reset_rate_limited: 429,
  email_cooldown: 429,
  email_rate_limited: 429,
  email_address_rejected: 400,
  mail_unavailable: 502,
  mail_timeout: 504,
  email_not_verified: 409,
  recovery_rate_limited: 429,
  sms_cooldown: 429,
  sms_rate_limited: 429,
  sms_country_paused: 429,
  invalid_phone_number: 400,
  phone_number_not_allowed: 400,
  phone_number_rejected: 400,
  sms_unavailable: 502,
  sms_timeout: 504,
  username_taken: 409,
  invite_expired: 410,
  webhook_url_refused: 400,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  server_error: 500,
  database_unavailable: 503,
  not_ready: 503,
};

/** Fastify's own client errors, by status, re-shaped into our codes. */
const FASTIFY_CODES: Record<number, [ErrorCode, string]> = {
  404: ['not_found', 'no such resource'],
  413: ['payload_too_large', 'the body is larger than 64 KiB'],
  415: [
    'unsupported_media_type',
    'send the body as Content-Type: application/json (the token, revocation and introspection endpoints also take application/x-www-form-urlencoded)',
  ],
};

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

declare module 'fastify' {
  interface FastifyReply {
    /** The error an answer carries, for the request's one log line (app.ts). */
    errorCode: ErrorCode | undefined;
  }
}

function send(reply: FastifyReply, code: ErrorCode, description: string, details?: Record<string, unknown>) {
  reply.errorCode = code;
  // Not even a route that may be cached (the JWKS, say) lets a cache keep its error.
  reply.header('cache-control', 'no-store');
  return reply.code(STATUS[code]).send({ error: code, error_description: description, ...details });
}

/** An `invalid_request` body for the answers written below Fastify, on the raw response or socket. */
function rawErrorAnswer(description: string): { head: Record<string, string>; body: string } {
  const body = JSON.stringify({ error: 'invalid_request', error_description: description });
  return {
    head: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      Connection: 'close',
    },
    body,
  };
}

/**
 * Fastify options for what is refused before any route or hook runs, answered in the contract's
 * shape instead of Fastify's (which repeats the path) or Node's (an empty body).
 */
export const preRoutingErrorOptions = {
  // Node would refuse an HTTP/1.1 request without Host itself, with an empty body; the onRequest
  // hook of app.ts refuses it instead (missingHostError).
  http: { requireHostHeader: false },
  // A path parameter over 100 characters, or one that does not decode.
  frameworkErrors(error, request, reply: FastifyReply) {
    // No hook runs before routing, the onResponse line included: this is the request's one line.
    request.log.info({ error: 'invalid_request', fastifyCode: error.code }, 'request refused: bad URL');
    const status = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
    // What the onRequest hook of app.ts sets, set here.
    reply.header('x-request-id', request.id).header('cache-control', 'no-store');
    reply.code(status).send({ error: 'invalid_request', error_description: 'the URL is malformed or too long' });
  },
  // HTTP that Node cannot parse is answered on the socket.
  clientErrorHandler(error, socket) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ECONNRESET' || socket.destroyed) return;
    const [status, description] =
      code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request headers are too large']
        : code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'the request took too long to arrive']
          : [400, 'the request is not valid HTTP'];
    const { head, body } = rawErrorAnswer(description);
    if (socket.writable) {
      const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`);
    }
    socket.destroy(error);
  },
} satisfies FastifyHttpOptions<Server>;

/** Node's own refusal of an HTTP/1.1 request without Host, in the contract's shape (for an onRequest hook). */
export function missingHostError(request: FastifyRequest): ServiceError | undefined {
  const hostMissing = request.headers.host === undefined && request.raw.httpVersion === '1.1';
  return hostMissing ? new ServiceError('invalid_request', 'an HTTP/1.1 request needs a Host header') : undefined;
}

/** Every error answer becomes `{error, error_description}`; 404 and 405 for unknown routes. */
export function registerErrorHandling(app: FastifyInstance): void {
  const routeMethods = new Set<HTTPMethods>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routeMethods.add(method);
  });

  app.decorateReply('errorCode', undefined);

  // An Expect other than 100-continue (RFC 9110 §10.1.1): Node answers 417 itself, with no body.
  app.server.on('checkExpectation', (_request, response) => {
    const { head, body } = rawErrorAnswer('only Expect: 100-continue is understood');
    response.writeHead(417, head).end(body);
  });

  app.setNotFoundHandler((request, reply) => {
    // The router matches the path as it matched it for the request's method: parameters included.
    const allowed = [...routeMethods].filter((method) => app.findRoute({ method, url: request.url }));
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      // The token endpoint's Pragma holds for a wrong method too (no-store is set by send()).
      reply.header('pragma', 'no-cache');
      return send(reply, 'method_not_allowed', `${request.method} is not allowed here`);
    }
    return send(reply, 'not_found', 'no such resource');
  });

  app.setErrorHandler((error: FastifyError | ServiceError, request, reply) => {
    // A refusal is told by the request's line (its status and errorCode); a failure also by its own.
    if (error instanceof ServiceError) {
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
      if (error.code === 'invalid_token' || error.code === 'insufficient_user_authentication') {
        // RFC 9470 §3: a step-up challenge says what would satisfy the call.
        const acrValues = error instanceof StepUpRequired && error.acrValues ? `, acr_values="${error.acrValues}"` : '';
        const stepUp = error instanceof StepUpRequired ? `${acrValues}, max_age=${error.maxAgeSeconds}` : '';
        reply.header(
          'www-authenticate',
          `Bearer realm="mfa", error="${error.code}", error_description="${error.description}"${stepUp}`,
        );
      }
      if (error.code === 'invalid_client') reply.header('www-authenticate', 'Basic realm="mfa"');
      return send(reply, error.code, error.description, error.details);
    }
    if (error.validation) {
      return send(reply, 'invalid_request', describeValidationError(error));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's messages for bad bodies can quote the body (a password, say): answer in our words.
      request.log.info({ fastifyCode: error.code, status }, 'request refused: malformed');
      const [code, description] = FASTIFY_CODES[status] ?? ['invalid_request', 'the request is malformed'];
      return send(reply, code, description);
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      reply.header('retry-after', '5');
      return send(reply, 'database_unavailable', 'the database cannot be reached; try again shortly');
    }
    request.log.error({ err: error }, 'request failed');
    return send(reply, 'server_error', 'the server could not answer; try again later');
  });
}

/**
 * What a schema failure tells the caller: the field and what to send instead, from the field's
 * schema description when it has one ("phone_number: expected a string of 7 to 15 digits, …"); a
 * missing field with the unknown ones sent beside it, which are often it misspelt
 * ("phone_number: required; got an unknown field "phone""); else Ajv's words.
 */
function describeValidationError(error: FastifyError): string {
  const [first] = error.validation ?? [];
  if (!first) return error.message;
  // Ajv adds the failing schema and the data it judged to its errors in verbose mode (app.ts).
  const { parentSchema, data } = first as { parentSchema?: JsonSchema; data?: unknown };
  const at = first.instancePath.slice(1).replaceAll('/', '.');
  const field = (name: unknown) => (at ? `${at}.${String(name)}` : String(name));
  if (first.keyword === 'required') {
    const unknown = unknownFields(data, parentSchema);
    const got = unknown.length === 1 ? 'an unknown field' : 'unknown fields';
    const also = unknown.length > 0 ? `; got ${got} ${unknown.map((name) => `"${name}"`).join(', ')}` : '';
    return `${field(first.params.missingProperty)}: required${also}`;
  }
  if (first.keyword === 'additionalProperties') {
    const known = Object.keys(parentSchema?.properties ?? {}).join(', ');
    return `${field(first.params.additionalProperty)}: unknown field; the fields are ${known}`;
  }
  const description = parentSchema?.description;
  if (typeof description !== 'string' || at === '') return error.message;
  return `${at}: expected ${description}`;
}

interface JsonSchema {
  description?: unknown;
  properties?: Record<string, unknown>;
}

/** The keys of `data` that `schema`, an object schema, does not name. */
function unknownFields(data: unknown, schema: JsonSchema | undefined): string[] {
  if (typeof data !== 'object' || data === null || !schema?.properties) return [];
  const known = schema.properties;
  return Object.keys(data).filter((key) => !Object.hasOwn(known, key));
}
