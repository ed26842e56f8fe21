// src/tracing.ts with its code paths taken out, for `npm run bench -- --tracing-ab` only: the
// bench builds the service a second time with this module in its place, so that the service with
// tracing off can be measured against one that has no tracing at all (issue 32). Nothing loads
// @opentelemetry/api; a call out runs its work with a span that records nothing.
import type { Span } from '@opentelemetry/api';
import type { Tracing } from '../src/tracing.js';

const NO_SPAN = {
  setAttribute: () => NO_SPAN,
  setAttributes: () => NO_SPAN,
  setStatus: () => NO_SPAN,
  recordException: () => undefined,
  end: () => undefined,
} as unknown as Span;

export function inSpan<T>(_name: string, _attributes: unknown, work: (span: Span) => Promise<T>): Promise<T> {
  return work(NO_SPAN);
}

export function traceHeaders(): Record<string, string> {
  return {};
}

export async function startTracing(): Promise<Tracing | undefined> {
  return undefined;
}
