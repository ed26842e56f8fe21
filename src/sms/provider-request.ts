import type { BaseLogger } from 'pino';
import { ServiceError } from '../errors.js';

/**
 * POSTs a form to an SMS provider and answers its status and parsed JSON body (undefined when the
 * body is not JSON). Throws `sms_timeout` when no whole answer comes within `timeoutMs`, and
 * `sms_unavailable` when the provider cannot be reached. `to` is the masked destination, for logs.
 */
export async function postToProvider(
  request: { url: string; form: Record<string, string>; headers?: Record<string, string>; timeoutMs: number },
  log: BaseLogger,
  facts: { provider: string; to: string },
): Promise<{ status: number; ok: boolean; answer: unknown }> {
  try {
    // One deadline for the answer and its body: a provider that stalls mid-body is as silent.
    const signal = AbortSignal.timeout(request.timeoutMs);
    const response = await fetch(request.url, {
      method: 'POST',
      headers: {
        ...request.headers,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams(request.form),
      signal,
    });
    const answer: unknown = await response.json().catch(() => undefined);
    return { status: response.status, ok: response.ok, answer };
  } catch (error) {
    if (error instanceof DOMException && error.name === 'TimeoutError') {
      log.warn({ ...facts, timeoutMs: request.timeoutMs }, 'the SMS provider did not answer in time');
      throw new ServiceError(
        'sms_timeout',
        'the SMS provider did not answer in time; the message may still arrive: use its code, or ask again after the cooldown',
      );
    }
    log.error({ ...facts, err: error }, 'the SMS provider could not be reached');
    throw new ServiceError('sms_unavailable', 'the SMS provider could not be reached; try again later');
  }
}
