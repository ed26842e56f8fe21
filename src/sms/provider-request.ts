import http from 'node:http';
import https from 'node:https';
import type { BaseLogger } from 'pino';
import { ServiceError } from '../errors.js';
import { inSpan, traceHeaders } from '../tracing.js';

/**
 * POSTs a form to an SMS provider and answers its status and parsed JSON body (undefined when the
 * body is not JSON). Throws `sms_timeout` when no whole answer comes within `timeoutMs`, and
 * `sms_unavailable` when the provider cannot be reached. `to` is the masked destination, for logs.
 *
 * Sent with node:http, as webhooks are, not `fetch`: the first `fetch` loads undici (14 MB more
 * resident) and 300 sends held 35 MB more than node:http did for the same (docs/PERFORMANCE.md).
 */
export async function postToProvider(
  request: { url: string; form: Record<string, string>; headers?: Record<string, string>; timeoutMs: number },
  log: BaseLogger,
  facts: { provider: string; to: string },
): Promise<{ status: number; ok: boolean; answer: unknown }> {
  // One deadline for the answer and its body: a provider that stalls mid-body is as silent.
  const signal = AbortSignal.timeout(request.timeoutMs);
  try {
    const url = new URL(request.url);
    // A span per send (CONTRACT §22): the provider and its host; never the number, the text or a credential.
    const { status, body } = await inSpan(
      `POST ${facts.provider}`,
      { 'sms.provider': facts.provider, 'server.address': url.hostname },
      async (span) => {
        const answer = await post(url, request.form, { ...request.headers, ...traceHeaders() }, signal);
        span.setAttribute('http.response.status_code', answer.status);
        return answer;
      },
    );
    return { status, ok: status >= 200 && status < 300, answer: parsedJson(body) };
  } catch (error) {
    if (signal.aborted) {
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

function post(
  url: URL,
  form: Record<string, string>,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<{ status: number; body: string }> {
  const payload = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    // Whatever stage the exchange is at when the deadline passes, it ends there.
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    const outgoing = (url.protocol === 'https:' ? https : http).request(
      url,
      {
        method: 'POST',
        signal,
        headers: {
          ...headers,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(Buffer.byteLength(payload)),
          accept: 'application/json',
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

function parsedJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
