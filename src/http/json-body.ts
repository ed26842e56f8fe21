import type { FastifyError } from 'fastify';
import { ServiceError } from '../errors.js';
import type { App } from './app-types.js';

/**
 * Fastify's JSON parser (which refuses `__proto__` and `constructor.prototype`), with a refusal that
 * says where the body stops being JSON instead of Fastify's bare "invalid JSON".
 */
export function registerJsonBodies(app: App): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body); // a string: parseAs
    parseJson(request, text, (error: Error | null, value?: unknown) => {
      const code = (error as FastifyError | null)?.code;
      if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
        done(new ServiceError('invalid_request', 'the body is empty; send a JSON object'), undefined);
      } else if (code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
        done(new ServiceError('invalid_request', describeJsonError(text)), undefined);
      } else {
        done(error, value);
      }
    });
  });
}

/**
 * Where `text` stops being JSON, by line and column, without quoting it (a body may hold a password).
 * The place is the end of its longest prefix that some JSON could still follow, found by halving:
 * V8's own messages give a position for some mistakes only.
 */
export function describeJsonError(text: string): string {
  if (isJsonPrefix(text)) {
    try {
      JSON.parse(text);
      return 'the body sets __proto__ or constructor.prototype, which is refused';
    } catch {
      return 'the body is not valid JSON: it ends before the JSON does (a missing closing quote, } or ])';
    }
  }
  let low = 0; // isJsonPrefix(text.slice(0, low)) holds, and fails for `high` characters
  let high = text.length;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (isJsonPrefix(text.slice(0, middle))) low = middle;
    else high = middle;
  }
  const before = text.slice(0, low);
  const line = before.split('\n').length;
  const column = low - before.lastIndexOf('\n');
  return `the body is not valid JSON: it goes wrong at line ${line}, column ${column} (character ${low + 1})`;
}

/** Whether `text` is JSON, or the start of some JSON: it fails only for lack of what would follow. */
function isJsonPrefix(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch (error) {
    const message = (error as SyntaxError).message;
    const position = /at position (\d+)/.exec(message)?.[1];
    return message.includes('Unexpected end of JSON input') || Number(position) >= text.length;
  }
}
