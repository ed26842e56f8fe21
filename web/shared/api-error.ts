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

/**
 * fetch for the service's JSON API: the parsed body of a 2xx answer (undefined when empty); an
 * `ApiError` for an error answer, and `network_error` when the service cannot be reached. Never cached.
 */
export async function fetchJson(url: URL | string, init: RequestInit): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'the service could not be reached');
  }
  return readAnswer(response);
}

/**
 * The body of a 2xx answer, parsed (undefined when empty or not JSON); for any other answer, throws
 * the ApiError its `{error, error_description}` body and `Retry-After` describe.
 */
export async function readAnswer(response: Response): Promise<unknown> {
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a proxy's page): the status says what there is to say.
    parsed = undefined;
  }
  if (response.ok) return parsed;
  const fields = (parsed ?? {}) as { error?: unknown; error_description?: unknown };
  const retryAfter = Number(response.headers.get('retry-after'));
  throw new ApiError(
    response.status,
    typeof fields.error === 'string' ? fields.error : `http_${response.status}`,
    typeof fields.error_description === 'string' ? fields.error_description : response.statusText,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
    response.headers,
  );
}
