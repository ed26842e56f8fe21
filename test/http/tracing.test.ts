// OpenTelemetry traces (CONTRACT §22): the service in its own process with OTEL_EXPORTER_OTLP_ENDPOINT
// set sends its spans to a small OTLP/HTTP receiver in the test process (as the fake Twilio stands
// for Twilio). A request is a span whose parent is the caller's traceparent; its SQL statements and
// its SMS send are its children; the SMS provider gets the trace context; no attribute holds a
// secret, a code, a token or a phone number.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FakeTwilio, startFakeTwilio } from '../support/fake-twilio.js';
import { type ServiceProcess, startServiceProcess } from '../support/node-process.js';
import { ADMIN_TOKEN, expectStatus } from '../support/service.js';

const PASSWORD = 'a tracing test passphrase';
const PHONE = '14155552671';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver (JSON encoding, POST /v1/traces): keeps every span, and what was sent. */
async function startOtlpReceiver() {
  const spans: ExportedSpan[] = [];
  const bodies: string[] = [];
  const protobufBodies: Buffer[] = [];
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method !== 'POST' || request.url !== '/v1/traces') return response.writeHead(404).end();
    if (request.headers['content-type'] === 'application/x-protobuf') {
      protobufBodies.push(Buffer.concat(chunks));
      return response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    }
    const body = Buffer.concat(chunks).toString('utf8');
    bodies.push(body);
    const parsed = JSON.parse(body) as {
      resourceSpans: { scopeSpans: { spans: ExportedSpan[] }[] }[];
    };
    for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    protobufBodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let twilio: FakeTwilio;
let service: ServiceProcess;
const folder = mkdtempSync(join(tmpdir(), 'mfa-tracing-'));

before(async () => {
  receiver = await startOtlpReceiver();
  twilio = await startFakeTwilio();
  service = await startServiceProcess({
    DATABASE_URL: `sqlite:${join(folder, 'mfa.sqlite')}`,
    ADMIN_TOKEN,
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000003',
    TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-tracing',
    TWILIO_FROM: '+15005550006',
    TWILIO_API_URL: twilio.url,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'mfa-under-test',
    // Spans go out within 100 ms instead of 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
});

after(async () => {
  await service?.stop();
  await twilio?.close();
  await receiver?.close();
  rmSync(folder, { recursive: true, force: true });
});

function call(
  path: string,
  init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> },
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  return fetch(service.url + path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

/** The spans of `traceId`, once the one named `name` (the request's, which ends last) has arrived. */
async function traceOf(traceId: string, until: (spans: ExportedSpan[]) => boolean): Promise<ExportedSpan[]> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const spans = receiver.spans.filter((span) => span.traceId === traceId);
    if (until(spans)) return spans;
    await sleep(50);
  }
  throw new Error(`the spans of trace ${traceId} did not arrive: ${JSON.stringify(receiver.spans.map((s) => s.name))}`);
}

const attribute = (span: ExportedSpan, key: string) => {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  return value && Object.values(value)[0];
};

describe('OpenTelemetry traces (CONTRACT §22)', () => {
  let accessToken = '';
  const secrets: string[] = [PASSWORD, ADMIN_TOKEN, 'twilio-auth-token-for-tracing', PHONE];

  test('a request continues the caller’s trace: the server span’s parent is the traceparent sent, its SQL statements are its children', async () => {
    await expectStatus(
      call('/admin/users', { method: 'POST', token: ADMIN_TOKEN, body: { username: 'tracy', password: PASSWORD } }),
      201,
    );
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const login = await expectStatus(
      call('/mfa/oauth2/token/', {
        method: 'POST',
        body: { grant_type: 'password', username: 'tracy', password: PASSWORD },
        headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
      }),
      200,
    );
    accessToken = login.access_token;
    secrets.push(login.access_token, login.refresh_token);
    const spans = await traceOf(traceId, (found) => found.some((span) => span.parentSpanId === callerSpanId));
    const server = spans.find((span) => span.parentSpanId === callerSpanId);
    assert.ok(server, 'a span whose parent is the caller’s');
    assert.equal(attribute(server, 'http.route'), '/mfa/oauth2/token/');
    const statements = spans.filter((span) => attribute(span, 'db.system.name') === 'sqlite');
    assert.ok(statements.length > 0, 'SQL statements are spans');
    const ids = new Set(spans.map((span) => span.spanId));
    for (const statement of statements) {
      assert.ok(statement.parentSpanId && ids.has(statement.parentSpanId), `${statement.name} belongs to the request`);
      assert.match(String(attribute(statement, 'db.query.text')), /^(select|insert|update|delete|with|begin)/i);
    }
  });

  test('an SMS send is a child span; the provider gets the trace context; its attributes name the provider, not the number', async () => {
    const traceId = randomBytes(16).toString('hex');
    await expectStatus(
      call('/mfa/sms/request/', {
        method: 'PUT',
        token: accessToken,
        body: { phone_number: PHONE },
        headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      }),
      200,
    );
    const sent = twilio.messages.at(-1);
    assert.ok(sent);
    secrets.push(twilio.lastCodeFor(`+${PHONE}`));
    assert.equal(sent.traceparent?.split('-')[1], traceId, 'Twilio got the trace context');
    const spans = await traceOf(traceId, (found) => found.some((span) => span.name === 'POST twilio'));
    const sms = spans.find((span) => span.name === 'POST twilio');
    assert.ok(sms);
    assert.equal(attribute(sms, 'server.address'), '127.0.0.1');
    assert.equal(attribute(sms, 'http.response.status_code'), 201);
    assert.ok(
      spans.some((span) => span.spanId === sms.parentSpanId),
      'the send belongs to the request',
    );
  });

  test('a query string stays out of the spans (a logout’s id_token_hint, a login hint)', async () => {
    const traceId = randomBytes(16).toString('hex');
    const hint = 'eyJhbGciOiJSUzI1NiJ9.secret-looking-hint.signature';
    secrets.push(hint);
    await call(`/mfa/oauth2/logout/?id_token_hint=${hint}`, {
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    const spans = await traceOf(traceId, (found) => found.some((span) => attribute(span, 'url.path')));
    const request = spans.find((span) => attribute(span, 'url.path'));
    assert.ok(request);
    assert.equal(attribute(request, 'url.path'), '/mfa/oauth2/logout/');
  });

  test('the specification’s default protocol, http/protobuf, when OTEL_EXPORTER_OTLP_PROTOCOL is unset', async () => {
    const other = await startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder, 'protobuf.sqlite')}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'mfa-over-protobuf',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    try {
      await fetch(`${other.url}/healthz`);
      for (let waited = 0; waited < 10_000 && receiver.protobufBodies.length === 0; waited += 50) await sleep(50);
      assert.ok(
        receiver.protobufBodies.some((body) => body.includes('mfa-over-protobuf')),
        'a protobuf export naming the service',
      );
    } finally {
      await other.stop();
    }
  });

  test('nothing the spans carry is a password, a token, a code, a credential or the phone number', () => {
    const everything = receiver.bodies.join('\n');
    assert.ok(everything.includes('mfa-under-test'), 'the resource names the service');
    for (const secret of secrets) assert.ok(!everything.includes(secret), `a span holds ${secret.slice(0, 6)}…`);
  });
});
