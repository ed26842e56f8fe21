import assert from 'node:assert/strict';
import type { Service } from './service.js';

const PASSWORD = 'correct horse battery';
const HOUR_MS = 3_600_000;

/** PUT /mfa/sms/request/ with this number. */
export function requestCode(on: Service, token: string, phone: string) {
  return on.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone } });
}

/** PUT /mfa/sms/verify/ with this code. */
export function verifyCode(on: Service, token: string, code: string) {
  return on.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: code } });
}

let userCount = 0;
/** A fresh user without MFA (password "correct horse battery"), with their id and a password-only token. */
export async function freshUser(on: Service, prefix = 'sms') {
  const username = `${prefix}-${++userCount}-${process.pid}`;
  const userId = await on.createUser(username, PASSWORD);
  return { username, userId, password: PASSWORD, token: await on.accessToken(username, PASSWORD) };
}

/** Asserts an error answer: this status, a body of exactly {error, error_description}, this code. */
export async function expectError(pending: Promise<Response>, status: number, error: string) {
  const response = await pending;
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status} ${error}, got ${response.status}: ${text}`);
  const body = JSON.parse(text) as { error: string; error_description: string };
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], text);
  assert.equal(body.error, error, text);
  assert.equal(typeof body.error_description, 'string');
  assert.ok(body.error_description.length > 0, 'the description is not empty');
  return { body, headers: response.headers };
}

/** The Retry-After header as whole seconds; fails unless it is one. */
export function retryAfterOf(headers: Headers): number {
  const raw = headers.get('retry-after') ?? '';
  assert.match(raw, /^\d+$/, `Retry-After: "${raw}"`);
  return Number(raw);
}

/** Moves the clock to just after the start of the next hour, so that no hourly window ends inside a test. */
export function startOfNextHour(on: Service) {
  const intoHourMs = on.clock.now().getTime() % HOUR_MS;
  on.clock.advance(Math.ceil((HOUR_MS - intoHourMs) / 1000) + 1);
}

/** The value of one series of /metrics, e.g. `mfa_sms_country_paused{country="NG"}`; undefined when absent. */
export async function metricValue(on: Service, series: string): Promise<number | undefined> {
  const text = await (await on.call('/metrics')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The messages the fake Twilio took for `phone` (digits). */
export function messagesTo(on: Service, phone: string) {
  return on.twilio.messages.filter((message) => message.to === `+${phone}`);
}
