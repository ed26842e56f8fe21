import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { type Service, startService } from '../support/service.js';

// The README's curl examples, pasted in order as a reader would: the walk-through, the
// authenticator app, then the OAuth 2.0 section. Each command is replayed with fetch (a small
// reading of the shell they are written in: quotes, $VARS, $(…), pipes to jq), with the codes a
// reader would copy from the console or the app in place of the README's. Each must succeed, and
// what the README shows after it must be what the service answered.

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
/** The sections that chain, each from its heading to the next heading of its level. */
const SECTIONS = ['## Walk-through with the console SMS sink', '## OAuth 2.0'];
const PHONE = '+14155552671';

let service: Service;
before(async () => {
  // The README's admin token; the issuer is the default the README shows (http://127.0.0.1:8000).
  service = await startService({ env: { ADMIN_TOKEN: 'change-me-to-a-long-secret' } });
});
after(() => service.close());

/** The ```sh blocks of the chosen sections, in order. */
function shellBlocks(): string[] {
  return SECTIONS.flatMap((heading) => {
    const start = README.indexOf(`\n${heading}\n`);
    assert.ok(start >= 0, `the README has a section "${heading}"`);
    const level = heading.split(' ')[0] ?? '##';
    const end = README.indexOf(`\n${level} `, start + heading.length + 2);
    const section = README.slice(start, end < 0 ? undefined : end);
    return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  });
}

interface Step {
  command: string;
  /** The comment lines right after it that show what it answers. */
  shown: string[];
}

/** A block as commands (continuation lines and multi-line quotes joined), each with what it shows. */
function stepsOf(block: string): Step[] {
  const steps: Step[] = [];
  let pending = '';
  let isRightAfterCommand = false;
  for (const line of block.split('\n')) {
    if (pending === '' && /^\s*(#|$)/.test(line)) {
      // What a command answers is shown right after it: JSON, or the status, and its continuation
      // lines; prose or a blank line ends it.
      const comment = line.replace(/^\s*#\s?/, '');
      const shown = steps.at(-1)?.shown;
      isRightAfterCommand &&= shown?.length === 0 ? /^[{[0-9]/.test(comment) : /^\s/.test(comment);
      if (isRightAfterCommand) shown?.push(comment);
      continue;
    }
    isRightAfterCommand = true;
    pending += pending === '' ? line : `\n${line}`;
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1);
      continue;
    }
    if ((pending.match(/'/g) ?? []).length % 2 === 1) continue;
    if (pending.trim() !== '') steps.push({ command: pending, shown: [] });
    pending = '';
  }
  return steps;
}

/** What the reader's shell knows: the variables the examples set, and the state the codes come from. */
const variables = new Map<string, string>();
let secondFactor: 'sms' | 'totp' = 'sms';
let authenticator: OTPAuth.TOTP | undefined;
let backupCodes: string[] = [];

/** Splits a command line into statements (`;`) of pipelines (`|`) of words, expanding as bash would. */
async function run(line: string): Promise<string> {
  let output = '';
  for (const statement of split(line, ';')) {
    let input = '';
    for (const stage of split(statement, '|')) input = await runCommand(await wordsOf(stage), input);
    output += input;
  }
  return output;
}

/** `text` cut at `separator` where it stands outside quotes, $(…) and comments. */
function split(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote = '';
  let depth = 0;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] ?? '';
    if (quote) {
      if (char === quote) quote = '';
    } else if (char === "'" || char === '"') {
      quote = char;
    } else if (char === '(' && text[index - 1] === '$') {
      depth += 1;
    } else if (char === ')' && depth > 0) {
      depth -= 1;
    } else if (char === '#' && depth === 0 && /\s/.test(text[index - 1] ?? ' ')) {
      break;
    } else if (char === separator && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  return [...parts, current].filter((part) => part.trim() !== '');
}

/** Words with quotes removed and $VAR, ${VAR} and $(…) expanded. */
async function wordsOf(text: string): Promise<string[]> {
  const words: string[] = [];
  let word: string | undefined;
  let index = 0;
  const expand = async (inDoubleQuotes: boolean): Promise<string> => {
    if (text[index + 1] === '(') {
      let depth = 0;
      let end = index + 1;
      for (; end < text.length; end += 1) {
        if (text[end] === '(') depth += 1;
        if (text[end] === ')' && --depth === 0) break;
      }
      const inner = text.slice(index + 2, end);
      index = end + 1;
      return (await run(inner)).replace(/\n+$/, '');
    }
    const name = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/.exec(text.slice(index))?.[0] ?? '$';
    index += name.length;
    if (name === '$') return '$';
    const variable = name.replace(/^\$\{?|\}$/g, '');
    const value = variables.get(variable);
    assert.ok(value !== undefined || inDoubleQuotes, `$${variable} is used before the README sets it`);
    return value ?? '';
  };
  while (index < text.length) {
    const char = text[index] ?? '';
    if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
      index += 1;
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      word = (word ?? '') + text.slice(index + 1, end);
      index = end + 1;
    } else if (char === '"') {
      word ??= '';
      index += 1;
      while (text[index] !== '"') {
        if (text[index] === '$') word += await expand(true);
        else word += text[index++];
      }
      index += 1;
    } else if (char === '$') {
      word = (word ?? '') + (await expand(false));
    } else {
      word = (word ?? '') + char;
      index += 1;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

async function runCommand([name = '', ...args]: string[], input: string): Promise<string> {
  const assignment = /^([A-Z_]+)=([\s\S]*)$/.exec(name);
  if (assignment && args.length === 0) {
    const [, variable = '', value = ''] = assignment;
    assert.notEqual(value, 'null', `${variable} is set to null: the answer it was read from had no such field`);
    // The reader's server is at BASE; this one listens on a port of its own.
    variables.set(variable, variable === 'BASE' ? service.url : value);
    return '';
  }
  if (name === 'echo') return `${args.join(' ')}\n`;
  if (name === 'jq') {
    const [flag, path = ''] = args;
    assert.equal(flag, '-r', 'jq -r .field is the only jq the examples use');
    const value = (JSON.parse(input) as Record<string, unknown>)[path.slice(1)];
    return `${value === undefined || value === null ? 'null' : String(value)}\n`;
  }
  assert.equal(name, 'curl', `a command the test does not know: ${name}`);
  return curl(args);
}

/** The curl options the README uses: -s, -X, -H, -d, -u, -w '%{http_code}\n'. */
async function curl(args: string[]): Promise<string> {
  let method: string | undefined;
  let url = '';
  let writeOut = '';
  const headers: Record<string, string> = {};
  const data: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] ?? '';
    const value = () => args[++index] ?? '';
    if (arg === '-s') continue;
    if (arg === '-X') method = value();
    else if (arg === '-H') {
      const [header = '', ...rest] = value().split(':');
      headers[header.toLowerCase()] = rest.join(':').trim();
    } else if (arg === '-d') data.push(value());
    else if (arg === '-u') headers.authorization = `Basic ${Buffer.from(value()).toString('base64')}`;
    else if (arg === '-w') writeOut = value();
    else if (arg.startsWith('-')) assert.fail(`a curl option the test does not know: ${arg}`);
    else url = arg;
  }
  let body = data.length > 0 ? data.join('&') : undefined;
  if (body !== undefined) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
    body = withRealCodes(body, url);
  }
  const response = await fetch(url, { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  // The one refusal the examples ask for: the error-style client's 403 mfa_required, with its mfa_token.
  const isChallenge = response.status === 403 && text.includes('"error":"mfa_required"');
  assert.ok(response.status < 400 || isChallenge, `curl ${args.join(' ')}\n→ ${response.status} ${text}`);
  remember(url, text);
  return `${text}${writeOut.replace('%{http_code}', String(response.status)).replace('\\n', '\n')}`;
}

/** The README's example codes, replaced by the ones the reader would read off the console or the app. */
function withRealCodes(body: string, url: string): string {
  const codeField = /(mfa_code|otp|backup_code)(=|":")([0-9]+)/;
  const match = codeField.exec(body);
  if (!match) return body;
  const [, field = '', separator = ''] = match;
  // Each code in a new 30 s step: an authenticator code is accepted once, and no earlier one after it.
  service.clock.advance(30);
  const factor = url.endsWith('/mfa/sms/verify/') ? 'sms' : url.endsWith('/mfa/totp/verify/') ? 'totp' : secondFactor;
  let code: string;
  if (field === 'backup_code') code = backupCodes.shift() ?? '';
  else if (factor === 'totp') code = authenticator?.generate({ timestamp: service.clock.now().getTime() }) ?? '';
  else code = service.twilio.lastCodeFor(PHONE);
  return body.replace(codeField, `${field}${separator}${code}`);
}

/** What a reader notes from an answer: the authenticator's secret, the backup codes, the factor verified. */
function remember(url: string, text: string) {
  const answer = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (typeof answer.secret === 'string' && url.endsWith('/mfa/totp/request/')) {
    authenticator = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(answer.secret) });
  }
  if (Array.isArray(answer.backup_codes)) backupCodes = answer.backup_codes.map(String);
  if (url.endsWith('/mfa/sms/verify/')) secondFactor = 'sms';
  if (url.endsWith('/mfa/totp/verify/')) secondFactor = 'totp';
}

/**
 * Asserts the answer holds what the README shows after the command: each `"key":value` it shows
 * whose value is written out (not elided with …), or the status a `-w '%{http_code}'` prints.
 */
function assertShown(step: Step, output: string) {
  const shown = step.shown.join(' ');
  if (/^\d{3}$/.test(step.shown[0] ?? '')) {
    assert.equal(output.trim().split('\n').at(-1), step.shown[0], `${step.command}\nshows ${shown}`);
    return;
  }
  const answer = output.trim();
  for (const [pair, key] of shown.matchAll(/"([a-z_]+)":("[^"…]*"|true|false|[0-9]+|\[(?:"[^"…]*",?)*\])(?=[,}\s])/g)) {
    // A new secret each time: the README shows one of them in full, so that it looks real.
    if (key === 'secret') continue;
    assert.ok(answer.includes(pair), `${step.command}\nthe README shows ${pair}; the service answered ${answer}`);
  }
}

test('the README’s examples chain when pasted in order: every command succeeds and answers what the README shows', async () => {
  const steps = shellBlocks().flatMap(stepsOf);
  assert.ok(steps.length > 30, `the examples were found (${steps.length} commands)`);
  for (const step of steps) {
    // Only curl against the service, and the variables they set (the README's other commands start programs).
    if (!/^([A-Z_]+=|curl )/.test(step.command.trim())) continue;
    assertShown(step, await run(step.command));
  }
  assert.equal(variables.get('BASE'), service.url);
});
