// `npm run admin -- <command>`: operator tasks straight on DATABASE_URL, no server needed.
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { createAuditTrail } from '../audit/audit-trail.js';
import { systemClock } from '../clock.js';
import { type Config, ConfigError, loadConfig } from '../config.js';
import { deriveKey } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { createSessions } from '../logins/sessions.js';
import { type CountryStatus, createCountryBudgets } from '../mfa/country-budgets.js';
import { createMfaRemoval } from '../mfa/mfa-removal.js';
import { createSecurityNotices } from '../notices/security-notices.js';
import { type ClientMetadataInput, parseClientMetadata, parseMfaChallenge } from '../oauth/client-metadata.js';
import { type ClientSettings, createClients } from '../oauth/clients.js';
import { createSigningKeys } from '../oauth/signing-keys.js';
import { createMessageOutbox, MESSAGE_SEALING_PURPOSE } from '../outbox/message-outbox.js';
import { maskPhone } from '../sms/sms-sender.js';
import { openDatabase } from '../store/database.js';
import { migrateToLatest } from '../store/migrate.js';
import { createStore, type Store } from '../store/store.js';
import { createAccounts } from '../users/accounts.js';
import { createInvites } from '../users/invites.js';
import { createWebhookEndpoints, WEBHOOK_SEALING_PURPOSE } from '../webhooks/endpoints.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../webhooks/outbox.js';

const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

interface Command {
  usage: string;
  summary: string;
  help: string;
  /** How many positional arguments it takes (at least; at most `maxArity` when some are optional). */
  arity: number;
  maxArity?: number;
  /** Printed with the usage line when the arguments are wrong. */
  argumentHint?: string;
  /** The options it takes besides --help. */
  options?: string[];
  run(args: string[], services: Services, options: ReadonlySet<string>): Promise<void>;
}

type Services = Awaited<ReturnType<typeof createServices>>;

async function createServices(store: Store, config: Config) {
  const clock = systemClock;
  const { secretKey, accessTokenTtlSeconds } = config;
  // Keys as app.ts derives them: from SECRET_KEY, else from the key kept in the database.
  const serviceSecret = await store.secrets.findServiceSecret(secretKey, clock.now());
  // Notices of what an operator does here are queued as the server's are; a running node sends them.
  const notices = createSecurityNotices({
    outbox: createMessageOutbox({ clock, sealingKey: deriveKey(serviceSecret, MESSAGE_SEALING_PURPOSE) }),
    serviceName: config.serviceName,
    issuer: config.issuer,
  });
  const audit = createAuditTrail({ store, clock, notices });
  const sessions = createSessions({ accessTokenTtlSeconds });
  return {
    accounts: createAccounts({ store, clock, audit, sessions }),
    invites: createInvites({ store, audit, clock, issuer: config.issuer }),
    removal: createMfaRemoval({ store, sessions, audit, clock }),
    clients: createClients({ store, clock }),
    signingKeys: () => createSigningKeys({ store, clock, secretKey, accessTokenTtlSeconds }),
    webhooks: () =>
      createWebhookEndpoints({
        store,
        clock,
        sealingKey: deriveKey(serviceSecret, WEBHOOK_SEALING_PURPOSE),
        allowPrivate: config.webhookAllowPrivate,
      }),
    countries: createCountryBudgets({ store, clock, limits: config.smsLimits, audit }),
    smsLimits: config.smsLimits,
  };
}

const COMMANDS: Record<string, Command> = {
  'create-user': {
    usage: 'create-user <username> [--without-password]',
    summary: 'create a user; the password is read from standard input',
    help: 'The password is the first line of standard input (never an argument, which would show in\nthe process list and the shell history):\n  printf "%s" "$PASSWORD" | npm run admin -- create-user alice\nWith --without-password the account signs in with passkeys; the invite link printed makes the first.',
    arity: 1,
    options: ['without-password'],
    argumentHint: 'The password is read from standard input, never from an argument or an option.',
    async run([username = ''], { accounts, invites }, options) {
      if (options.has('without-password')) {
        const user = await accounts.createUser(username);
        const invite = await invites.issueInvite(user.id);
        print(`created user ${user.username} (${user.id}) without a password\ninvite_url=${invite.url}`);
        return;
      }
      const password = await readPassword();
      const user = await accounts.createUser(username, password);
      print(`created user ${user.username} (${user.id})`);
    },
  },
  'set-password': {
    usage: 'set-password <username>',
    summary: "set a user's password, read from standard input; every login of the user ends",
    help: 'The password is the first line of standard input, as for create-user:\n  printf "%s" "$PASSWORD" | npm run admin -- set-password alice\nIt must be 8 to 1024 characters, not a common or breached password, and not the username.\nEvery login and sign-in session of the user ends, tokens included.',
    arity: 1,
    argumentHint: 'The password is read from standard input, never from an argument or an option.',
    async run([username = ''], { accounts }) {
      const user = await accounts.getUser(username);
      const password = await readPassword();
      await accounts.setPassword(user.id, password);
      print(`password set for ${user.username}; every login of the user has ended`);
    },
  },
  invite: {
    usage: 'invite <username>',
    summary: "print a one-time link (24 h) that makes an account's first passkey",
    help: 'For an account without a password, or one whose MFA was reset. Earlier links of the user stop\nworking. The link holds a secret: send it to the person only.',
    arity: 1,
    async run([username = ''], { accounts, invites }) {
      const user = await accounts.getUser(username);
      const invite = await invites.issueInvite(user.id);
      print(`invite_url=${invite.url}\nexpires_at=${invite.expiresAt.toISOString()}`);
    },
  },
  'create-client': {
    usage: 'create-client <name> [field=value …]',
    summary: 'register an OAuth client; prints its settings and its secret once',
    help: `Fields, lists comma-separated:
  redirect_uris=https://app.example.com/callback,http://127.0.0.1/callback
  post_logout_redirect_uris=https://app.example.com/
  token_endpoint_auth_method=client_secret_basic|client_secret_post|none   (none: a public client, no secret)
  allowed_scopes="openid profile offline_access"
  web_origins=https://app.example.com
  id_token_signed_response_alg=RS256|ES256|EdDSA
  mfa_policy=optional|required
  remember_device_days=30   (days a browser may skip the second step once ticked; 0, the default: never)
  mfa_challenge=seed|error
The secret is stored hashed and cannot be shown again (rotate-client-secret makes a new one).`,
    arity: 1,
    maxArity: 10,
    async run([name = '', ...fields], { clients }) {
      if (name.length === 0 || name.length > 200)
        throw new ServiceError('invalid_request', 'name must be 1 to 200 characters');
      const { name: _rename, ...settings } = clientSettingsFromArguments(fields);
      const created = await clients.registerClient(name, settings);
      printClient(created.settings, created.clientSecret);
    },
  },
  'update-client': {
    usage: 'update-client <client_id> field=value [field=value …]',
    summary: "change a client's settings",
    help: 'The fields of create-client, and name=…; a list given replaces the whole list.',
    arity: 2,
    maxArity: 11,
    async run([clientId = '', ...fields], { clients }) {
      const { name, ...settings } = clientSettingsFromArguments(fields, ['name']);
      const updated = await clients.updateClient(clientId, { ...settings, name });
      printClient(updated.settings, updated.clientSecret);
    },
  },
  'show-client': {
    usage: 'show-client <client_id>',
    summary: "show a client's settings",
    help: 'Every setting but the secret, which is never shown again.',
    arity: 1,
    async run([clientId = ''], { clients }) {
      printClient(await clients.getClient(clientId));
    },
  },
  'list-clients': {
    usage: 'list-clients',
    summary: 'list the clients: id, name, authentication method, redirect URIs',
    help: 'One client a line, oldest first.',
    arity: 0,
    async run(_args, { clients }) {
      for (const client of await clients.listClients()) {
        print(
          `${client.id}  ${client.name}  ${client.tokenEndpointAuthMethod}  ${client.redirectUris.join(',') || '(no browser flow)'}`,
        );
      }
    },
  },
  'rotate-client-secret': {
    usage: 'rotate-client-secret <client_id>',
    summary: 'give a confidential client a new secret; prints it once, the old one stops working',
    help: 'Public clients (token_endpoint_auth_method=none) have no secret.',
    arity: 1,
    async run([clientId = ''], { clients }) {
      print(`client_id=${clientId}\nclient_secret=${await clients.rotateSecret(clientId)}`);
    },
  },
  'delete-client': {
    usage: 'delete-client <client_id>',
    summary: 'delete a client; its refresh tokens stop working',
    help: 'Its codes and sign-ins in progress go with it.',
    arity: 1,
    async run([clientId = ''], { clients }) {
      await clients.deleteClient(clientId);
      print(`deleted client ${clientId}`);
    },
  },
  'set-mfa-challenge': {
    usage: 'set-mfa-challenge <client_id> <seed|error>',
    summary: 'choose how a client is told a second factor is needed',
    help: "seed: the seed's 200 {mfa_required, mfa_type}, after which the client sends the password again\nwith the code. error: 403 mfa_required with an mfa_token, finished with the mfa-otp or\nmfa-recovery-code grant (what generic OAuth libraries expect).",
    arity: 2,
    async run([clientId = '', style = ''], { clients }) {
      const { settings } = await clients.updateClient(clientId, { mfaChallenge: parseMfaChallenge(style) });
      print(`client ${settings.id} now gets mfa_challenge=${settings.mfaChallenge}`);
    },
  },
  'reset-mfa': {
    usage: 'reset-mfa <username>',
    summary: "turn a user's MFA off (lost phone): phone, codes and backup codes are removed",
    help: "Every login of the user ends (a thief's tokens included). The user can log in with the\npassword alone afterwards and enrol again.",
    arity: 1,
    async run([username = ''], { accounts, removal }) {
      const user = await accounts.getUser(username);
      const { wasEnabled } = await removal.removeAllFactors(user.id, { by: 'operator' });
      print(wasEnabled ? `MFA reset for ${username}` : `MFA was not on for ${username}; nothing pending remains`);
    },
  },
  'grant-operator': {
    usage: 'grant-operator <username>',
    summary: 'make a user an operator: the admin API (and the console) with their own sign-in',
    help: 'An operator signs in through the hosted sign-in with a passkey or an authenticator app; their\naccess token then calls /admin/ (reads with any such sign-in, changes within STEP_UP_MAX_AGE).\nEvery change they make is an audit event and an operator.action webhook naming them.',
    arity: 1,
    async run([username = ''], { accounts }) {
      const user = await accounts.getUser(username);
      await accounts.setOperator(user.id, true);
      print(`${user.username} is an operator`);
    },
  },
  'revoke-operator': {
    usage: 'revoke-operator <username>',
    summary: 'take the operator role back; their next admin call is refused',
    help: 'Their sign-ins go on as a user; the admin API refuses their access token from the next call.',
    arity: 1,
    async run([username = ''], { accounts }) {
      const user = await accounts.getUser(username);
      await accounts.setOperator(user.id, false);
      print(`${user.username} is no longer an operator`);
    },
  },
  'delete-user': {
    usage: 'delete-user <username>',
    summary: 'delete a user with everything of theirs; their tokens stop working at once',
    help: "The audit trail keeps the user's events until they pass AUDIT_RETENTION_DAYS.",
    arity: 1,
    async run([username = ''], { accounts }) {
      const user = await accounts.getUser(username);
      await accounts.deleteUser(user.id);
      print(`deleted user ${user.username} (${user.id})`);
    },
  },
  'list-users': {
    usage: 'list-users',
    summary: 'list users with their second factors',
    help: 'One line per user: username, id, the types of their verified factors (or off), and the\nphone masked to its last 4 digits.',
    arity: 0,
    async run(_args, { accounts }) {
      print('username\tid\tmfa\tphone');
      // A page at a time, printed as it comes: a million users neither wait nor fill the memory.
      let after: string | undefined;
      for (;;) {
        const users = await accounts.listUsers({ after, limit: 1000 });
        if (users.length === 0) break;
        await printWhenTaken(
          users
            .map((user) =>
              [
                user.username,
                user.id,
                user.factorTypes.length > 0 ? user.factorTypes.join(',') : 'off',
                user.phoneNumber ? maskPhone(user.phoneNumber) : '-',
              ].join('\t'),
            )
            .join('\n'),
        );
        after = users.at(-1)?.usernameKey;
      }
    },
  },
  'rotate-signing-key': {
    usage: 'rotate-signing-key',
    summary: 'make a new signing key per algorithm active; older keys stay published until their tokens expire',
    help: 'Prints the kid of the new EdDSA key, the one access tokens name. Running nodes start signing\nwith the new keys within 10 s.',
    arity: 0,
    async run(_args, { signingKeys }) {
      print(`new signing key ${await (await signingKeys()).rotate()}`);
    },
  },
  'create-webhook': {
    usage: 'create-webhook <url> [event,event…]',
    summary: 'send security events to a URL; prints its signing secret once',
    help: `Without a list, every event is sent. Events: ${WEBHOOK_EVENT_TYPES.join(', ')}.\nThe URL must be https and public unless WEBHOOK_ALLOW_PRIVATE=true. The secret (whsec_…) is\nstored sealed and cannot be shown again.`,
    arity: 1,
    maxArity: 2,
    async run([url = '', list], { webhooks }) {
      const events = list?.split(',').map((event) => event.trim());
      const unknown = events?.find((event) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event));
      if (unknown !== undefined) {
        throw new ServiceError(
          'invalid_request',
          `unknown event "${unknown}"; events: ${WEBHOOK_EVENT_TYPES.join(', ')}`,
        );
      }
      const { endpoint, secret } = await webhooks().createEndpoint(url, events as WebhookEventType[]);
      print(`id=${endpoint.id}\nsecret=${secret}`);
    },
  },
  'list-webhooks': {
    usage: 'list-webhooks',
    summary: 'list the webhook endpoints',
    help: 'One line per endpoint: id, URL and the events it receives.',
    arity: 0,
    async run(_args, { webhooks }) {
      const endpoints = await webhooks().listEndpoints();
      print(['id\turl\tevents', ...endpoints.map((e) => [e.id, e.url, e.events.join(',')].join('\t'))].join('\n'));
    },
  },
  'delete-webhook': {
    usage: 'delete-webhook <id>',
    summary: 'stop sending events to an endpoint; its pending deliveries are dropped',
    help: 'The id is the one create-webhook and list-webhooks print.',
    arity: 1,
    async run([id = ''], { webhooks }) {
      await webhooks().deleteEndpoint(id);
      print(`deleted webhook ${id}`);
    },
  },
  'webhook-deliveries': {
    usage: 'webhook-deliveries <id>',
    summary: "an endpoint's latest delivery attempts, newest first",
    help: 'One line per attempt: event id (the webhook-id the receiver saw), type, attempt, status\n(succeeded, failed, pending), the HTTP status answered, and when it was made.',
    arity: 1,
    async run([id = ''], { webhooks }) {
      const attempts = await webhooks().listDeliveries(id);
      print(
        [
          'event_id\ttype\tattempt\tstatus\tresponse_status\tattempted_at',
          ...attempts.map((a) =>
            [
              a.eventId,
              a.eventType,
              a.attempt,
              a.status,
              a.responseStatus ?? '-',
              a.attemptedAt?.toISOString() ?? '-',
            ].join('\t'),
          ),
        ].join('\n'),
      );
    },
  },
  'sms-status': {
    usage: 'sms-status',
    summary: 'show the enrolment SMS budgets, by country, and the countries paused',
    help: 'One line per country with enrolment SMS in the last 7 days, a budget of its own or a pause:\nsent this clock hour and its hourly budget, its hourly average over the 7 days before, the\ncount above which it pauses, and its state. Then the settings every country shares.',
    arity: 0,
    async run(_args, { countries, smsLimits }) {
      const rows = await countries.listCountries();
      const { perCountryPerHour, perRangePerHour, anomaly } = smsLimits;
      const table = [
        ['country', 'sent this hour', 'hourly budget', 'hourly average, 7 days', 'pauses above', 'state'],
        ...rows.map((row) => [
          row.country,
          String(row.sentThisHour),
          String(row.hourlyLimit),
          row.averagePerHour.toFixed(1),
          String(row.pauseThreshold),
          stateOf(row),
        ]),
      ];
      print(
        [
          alignColumns(table),
          '',
          `budget per country: ${perCountryPerHour.default} an hour, unless set above (SMS_COUNTRY_HOURLY_LIMIT)`,
          `budget per number range (all digits but the last 2): ${perRangePerHour} an hour (SMS_RANGE_HOURLY_LIMIT)`,
          `a country pauses past ${anomaly.multiple} × its 7-day hourly average, and never below ${anomaly.floor} an hour (SMS_ANOMALY_MULTIPLE, SMS_ANOMALY_FLOOR)`,
        ].join('\n'),
      );
    },
  },
  'sms-resume': {
    usage: 'sms-resume <country>',
    summary: 'resume the enrolment SMS of a country the anomaly check paused',
    help: 'The country is its ISO 3166 code (US, GB), as sms-status shows it. The resume holds for the\nrest of the clock hour; the country budget still applies.',
    arity: 1,
    async run([country = ''], { countries }) {
      const code = country.toUpperCase();
      if (!(await countries.resume(code))) {
        throw new ServiceError('invalid_request', `enrolment SMS to ${code} are not paused (see sms-status)`);
      }
      print(`enrolment SMS to ${code} resumed for the rest of the hour`);
    },
  },
};

/** Rows as a table for people: each column as wide as its widest cell, two spaces between them. */
function alignColumns(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A country's state as sms-status prints it. */
function stateOf(row: CountryStatus): string {
  if (row.pausedUntil) return `paused until ${row.pausedUntil.toISOString()} (sms-resume ${row.country})`;
  if (row.resumedAt) return `resumed at ${row.resumedAt.toISOString()}`;
  return 'sending';
}

function mainHelp(): string {
  const width = Math.max(...Object.values(COMMANDS).map((command) => command.usage.length));
  return [
    'usage: npm run admin -- <command> [arguments]',
    '',
    'Works directly on DATABASE_URL (default sqlite:./data/mfa.sqlite). Commands:',
    ...Object.values(COMMANDS).map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`),
    '',
    'npm run admin -- <command> --help tells more.',
  ].join('\n');
}

function print(text: string) {
  process.stdout.write(`${text}\n`);
}

/**
 * `print`, then waits until standard output has taken it: to a pipe, Node queues what the reader
 * has not read yet, so a long listing printed at once would wait in memory (list-users at a
 * million users peaked at 327 MB, 107 MB at 300 000 users written to a file against 190 to a pipe).
 */
async function printWhenTaken(text: string) {
  if (!process.stdout.write(`${text}\n`)) await once(process.stdout, 'drain');
}

/**
 * The password: the first line of standard input, without its line ending. From a terminal it is
 * typed after a prompt and not shown (the terminal's echo is off while it is read).
 */
async function readPassword(): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = '';
    for await (const chunk of stdin) text += chunk;
    return text.split(/\r?\n/, 1)[0] ?? '';
  }
  // Raw mode: no echo, and each key arrives as typed, so Enter, Backspace and Ctrl-C are ours to handle.
  // Set before the prompt shows: a password typed or pasted as soon as it appears is not echoed.
  stdin.setRawMode(true);
  process.stderr.write('password (not shown): ');
  stdin.setEncoding('utf8');
  let password = '';
  try {
    for await (const chunk of stdin) {
      for (const key of chunk as string) {
        if (key === '\r' || key === '\n' || key === '\u0004') return password;
        if (key === '\u0003') throw new ServiceError('invalid_request', 'cancelled; no user was created');
        password = key === '\u007f' || key === '\b' ? password.slice(0, -1) : password + key;
      }
    }
    return password;
  } finally {
    stdin.setRawMode(false);
    process.stderr.write('\n');
  }
}

/** The list fields of a client's metadata: given comma-separated on the command line. */
const LIST_FIELDS = new Set(['redirect_uris', 'post_logout_redirect_uris', 'web_origins']);
const METADATA_FIELDS = new Set([
  ...LIST_FIELDS,
  'token_endpoint_auth_method',
  'allowed_scopes',
  'id_token_signed_response_alg',
  'mfa_policy',
  'remember_device_days',
]);

/** A field's command-line value as the admin API's JSON would carry it. */
function fieldValue(key: string, value: string): unknown {
  if (LIST_FIELDS.has(key)) return value.split(',').filter(Boolean);
  if (key === 'remember_device_days' && /^\d+$/.test(value)) return Number(value);
  return value;
}

/** `field=value` arguments as client settings, checked as the admin API checks them. */
function clientSettingsFromArguments(fields: string[], extra: string[] = []) {
  const input: ClientMetadataInput & Record<string, unknown> = {};
  let mfaChallenge: string | undefined;
  let name: string | undefined;
  for (const field of fields) {
    const [key = '', ...rest] = field.split('=');
    const value = rest.join('=');
    if (key === 'mfa_challenge') mfaChallenge = value;
    else if (key === 'name' && extra.includes('name')) name = value;
    else if (METADATA_FIELDS.has(key)) input[key] = fieldValue(key, value);
    else {
      const known = [...METADATA_FIELDS, 'mfa_challenge', ...extra].join(', ');
      throw new ServiceError('invalid_request', `"${field}" is not field=value of a known field (${known})`);
    }
  }
  if (name !== undefined && (name.length === 0 || name.length > 200)) {
    throw new ServiceError('invalid_request', 'name must be 1 to 200 characters');
  }
  return {
    ...parseClientMetadata(input),
    ...(mfaChallenge !== undefined && { mfaChallenge: parseMfaChallenge(mfaChallenge) }),
    name,
  };
}

function printClient(client: ClientSettings, clientSecret?: string): void {
  const lines = [
    `client_id=${client.id}`,
    ...(clientSecret ? [`client_secret=${clientSecret}`] : []),
    `name=${client.name}`,
    `mfa_challenge=${client.mfaChallenge}`,
    `redirect_uris=${client.redirectUris.join(',')}`,
    `post_logout_redirect_uris=${client.postLogoutRedirectUris.join(',')}`,
    `token_endpoint_auth_method=${client.tokenEndpointAuthMethod}`,
    `allowed_scopes=${client.allowedScopes.join(' ')}`,
    `web_origins=${client.webOrigins.join(',')}`,
    `id_token_signed_response_alg=${client.idTokenSignedResponseAlg}`,
    `mfa_policy=${client.mfaPolicy}`,
    `remember_device_days=${client.rememberDeviceDays}`,
  ];
  print(lines.join('\n'));
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    tokens: true,
    options: { help: { type: 'boolean', short: 'h' } },
  });
  // Not strict, so that a command's --help works whatever else was typed; any other option is an error.
  const [name, ...args] = positionals;
  const given = tokens.flatMap((token) => (token.kind === 'option' && token.name !== 'help' ? [token] : []));
  const allowed = COMMANDS[name ?? '']?.options ?? [];
  const unknownOptions = given.filter((token) => !allowed.includes(token.name)).map((token) => token.rawName);
  if (name === undefined) {
    print(mainHelp());
    return values.help ? EXIT.ok : EXIT.usage;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`unknown command "${name}"\n\n${mainHelp()}\n`);
    return EXIT.usage;
  }
  if (values.help) {
    print(`usage: npm run admin -- ${command.usage}\n\n${command.summary}.\n${command.help}`);
    return EXIT.ok;
  }
  const maxArity = command.maxArity ?? command.arity;
  if (unknownOptions.length > 0 || args.length < command.arity || args.length > maxArity) {
    const count = maxArity === command.arity ? `${command.arity}` : `${command.arity} or ${maxArity}`;
    const problem =
      unknownOptions.length > 0
        ? `unknown option ${unknownOptions.join(', ')}`
        : `${name} takes ${count} argument${maxArity === 1 ? '' : 's'}, not ${args.length}`;
    const hint = command.argumentHint ? `${command.argumentHint}\n` : '';
    process.stderr.write(`error: ${problem}\nusage: npm run admin -- ${command.usage}\n${hint}`);
    return EXIT.usage;
  }

  const config = loadConfig(process.env);
  const { db } = await openDatabase(config.databaseUrl, config.databasePool);
  try {
    await migrateToLatest(db);
    await command.run(args, await createServices(createStore(db), config), new Set(given.map((token) => token.name)));
    return EXIT.ok;
  } finally {
    await db.destroy();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof ConfigError) process.stderr.write(`configuration error: ${error.message}\n`);
  else if (error instanceof ServiceError) process.stderr.write(`error: ${error.description}\n`);
  else process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = EXIT.failed;
}
