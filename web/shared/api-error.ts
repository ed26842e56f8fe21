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
