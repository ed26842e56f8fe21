// The service's error answers as every page sees them, whichever endpoints it calls.

/** An error answer `{error, error_description}`, with its status and any `Retry-After`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly description: string,
    readonly retryAfterSeconds?: number,
    readonly headers?: Headers,
  ) {
    super(`${code}: ${description}`);
  }
}

/** The error a refused answer carries, from its `{error, error_description}` body (`text`) and `Retry-After`. */
export function apiErrorOf(response: Response, text: string): ApiError {
  let fields: { error?: unknown; error_description?: unknown } = {};
  try {
    fields = text ? JSON.parse(text) : {};
  } catch {
    // Not JSON (a proxy's page): the status says what there is to say.
  }
  const retryAfter = Number(response.headers.get('retry-after'));
  return new ApiError(
    response.status,
    typeof fields.error === 'string' ? fields.error : `http_${response.status}`,
    typeof fields.error_description === 'string' ? fields.error_description : response.statusText,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  );
}
