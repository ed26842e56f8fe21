import { type Attributes, context, propagation, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyPluginCallback } from 'fastify';

// OpenTelemetry traces (CONTRACT §22). The API package alone is loaded always: without a registered
// SDK its tracer does nothing. The SDK, the OTLP exporter and the Fastify instrumentation load only
// when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Spans carry
// routes, SQL with placeholders, hosts and outcomes: never a query string, a parameter, a body, a
// phone number, a code or a token.

const tracer = trace.getTracer('mfa-service');

/**
 * Runs `work` in a span, a child of the request's; the span ends with it, marked as an error if
 * it throws. `kind` CLIENT for a call out (database, SMS provider, webhook receiver).
 */
export function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The W3C trace context of the current span, as headers for a call out (traceparent, tracestate). */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

export interface Tracing {
  /** Registered on the Fastify app before any route: a span per request, W3C traceparent honoured. */
  fastifyPlugin: FastifyPluginCallback;
  /** Sends the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** The tracing SDK when an OTLP endpoint is set; undefined (nothing loaded) otherwise. */
export async function startTracing(env: NodeJS.ProcessEnv): Promise<Tracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // OTLP/HTTP with protobuf (the specification's default) or JSON, as OTEL_EXPORTER_OTLP_PROTOCOL says.
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, got "${protocol}"`);
  }
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, otel] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/sdk-trace-base'),
      protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http')
        : import('@opentelemetry/exporter-trace-otlp-proto'),
      import('@opentelemetry/resources'),
      import('@fastify/otel'),
    ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'mfa-service' }),
    // The exporter reads the OTEL_EXPORTER_OTLP_* settings itself (endpoint, headers, timeout).
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The AsyncLocalStorage context manager and the W3C trace context propagator.
  provider.register();
  const instrumentation = new otel.FastifyOtelInstrumentation({
    // The path without its query: a logout's id_token_hint, a login_hint, a state stay out.
    requestHook(span, request) {
      span.setAttribute('url.path', request.url.split('?')[0] ?? '');
    },
  });
  instrumentation.setTracerProvider(provider);
  return {
    fastifyPlugin: instrumentation.plugin(),
    shutdown: () => provider.shutdown(),
  };
}
