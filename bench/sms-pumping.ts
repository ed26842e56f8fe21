// `npm run bench:sms-pumping [-- --attack-hours=2 --attack-per-hour=2000]`: replays an SMS-pumping
// attack against the service, with the fraud defence (CONTRACT §15) off and then at its defaults,
// and prints how many SMS went to the attack and how many to real users.
//
// Each run is the real service (buildApp, the code `npm start` runs, started as the tests start it:
// a fresh SQLite file, or a PostgreSQL schema with TEST_DATABASE=postgres) on a simulated clock,
// listening on a local port and called over HTTP, with a local fake of Twilio counting what went out. The clock is simulated so that a week of ordinary traffic (the history
// the anomaly pause compares with) and the attack hours replay in a minute or two.
import { parsePhoneNumber } from '../src/mfa/phone-numbers.js';
import { ADMIN_TOKEN, startService, TestClock } from '../test/support/service.js';

const HOUR_MS = 3_600_000;
const PASSWORD = 'correct horse battery';
const option = (name: string, fallback: number) =>
  Number(new RegExp(`--${name}=(\\d+)`).exec(process.argv.join(' '))?.[1] ?? fallback);
const HISTORY_HOURS = 7 * 24;
const ATTACK_HOURS = option('attack-hours', 2);
const ATTACK_PER_HOUR = option('attack-per-hour', 2000);
/** Accounts the attacker made; each may enrol 10 numbers an hour (SMS_USER_HOURLY_LIMIT). */
const ATTACK_ACCOUNTS = 200;
const REAL_ACCOUNTS = 40;

/** Real enrolments per hour, by country: the week of history, and the real users during the attack. */
const REAL_PER_HOUR: Record<string, number> = { US: 12, GB: 6, DE: 4, FR: 3, NG: 1, ID: 1 };
/** A prefix and a length per country; random digits fill the rest, kept when valid and mobile. */
const REAL_NUMBERS: Record<string, { prefix: string; length: number }> = {
  US: { prefix: '1', length: 11 },
  GB: { prefix: '447', length: 12 },
  DE: { prefix: '4915', length: 13 },
  FR: { prefix: '336', length: 11 },
  NG: { prefix: '234', length: 13 },
  ID: { prefix: '628', length: 13 },
};
type Target = { name: string; first: number; share: number };
/** The attack: sequential numbers from these, in these shares. GB 09 is premium rate. */
const ATTACK_TARGETS: [Target, ...Target[]] = [
  { name: 'NG mobile, sequential', first: 2_348_039_000_000, share: 0.4 },
  { name: 'ID mobile, sequential', first: 6_281_290_000_000, share: 0.4 },
  { name: 'GB premium rate (09), sequential', first: 449_095_550_000, share: 0.2 },
];

/** The target whose share of [0, 1) holds `draw`. */
function pickTarget(draw: number): Target {
  let below = 0;
  for (const target of ATTACK_TARGETS) {
    below += target.share;
    if (draw < below) return target;
  }
  return ATTACK_TARGETS[0];
}

/** Every setting of CONTRACT §15 turned off or out of reach; the caps that came before stay. */
const DEFENCES_OFF = {
  SMS_BLOCKED_LINE_TYPES: 'none',
  SMS_COUNTRY_HOURLY_LIMIT: '10000000',
  SMS_RANGE_HOURLY_LIMIT: '1000000',
  SMS_ANOMALY_FLOOR: '10000000',
};

/** mulberry32: the same "random" traffic in every run. */
function seededRandom(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Tally {
  attempts: number;
  /** SMS the provider took. */
  sent: number;
  /** Refusals by error code. */
  refused: Record<string, number>;
}

const newTally = (): Tally => ({ attempts: 0, sent: 0, refused: {} });

interface Account {
  access: string;
  refresh: string;
}

async function simulate(label: string, env: Record<string, string>) {
  // The simulation starts on a clock hour, 8 days before the hour the attack starts.
  const clock = new TestClock(Math.floor(Date.now() / HOUR_MS) * HOUR_MS);
  const service = await startService({
    clock,
    env: {
      LOG_LEVEL: 'silent',
      // A simulated day passes in seconds: tokens that last a day, refreshed daily.
      ACCESS_TOKEN_TTL: '86400',
      ...env,
    },
  });
  const { twilio } = service;
  const base = service.url;
  const random = seededRandom(15);

  async function call(path: string, method: string, body: object, token?: string) {
    const response = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  async function createAccounts(prefix: string, count: number): Promise<Account[]> {
    const accounts: Account[] = [];
    for (let index = 0; index < count; index += 8) {
      const batch = Array.from({ length: Math.min(8, count - index) }, async (_, offset) => {
        const username = `${prefix}-${index + offset}`;
        const created = await fetch(`${base}/admin/users`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
          body: JSON.stringify({ username, password: PASSWORD }),
        });
        if (created.status !== 201) throw new Error(`creating ${username}: ${created.status}`);
        const login = await call('/mfa/oauth2/token/', 'POST', {
          grant_type: 'password',
          username,
          password: PASSWORD,
        });
        return { access: login.body.access_token ?? '', refresh: login.body.refresh_token ?? '' };
      });
      accounts.push(...(await Promise.all(batch)));
    }
    return accounts;
  }

  async function refreshTokens(accounts: Account[]) {
    for (const account of accounts) {
      const { body } = await call('/mfa/oauth2/token/', 'POST', {
        grant_type: 'refresh_token',
        refresh_token: account.refresh,
      });
      account.access = body.access_token ?? '';
      account.refresh = body.refresh_token ?? '';
    }
  }

  function realNumber(country: string): string {
    const { prefix, length } = REAL_NUMBERS[country] ?? { prefix: '1', length: 11 };
    for (;;) {
      let digits = prefix;
      while (digits.length < length) digits += Math.floor(random() * 10);
      try {
        const phone = parsePhoneNumber(digits);
        if (phone.isValid && phone.country === country && /MOBILE/.test(phone.lineType ?? '')) return digits;
      } catch {
        // Not even possible: draw again.
      }
    }
  }

  const realNumbers = new Set<string>();
  async function enrol(account: Account, phone: string, tally: Tally) {
    tally.attempts += 1;
    const { status, body } = await call('/mfa/sms/request/', 'PUT', { phone_number: phone }, account.access);
    if (status === 200) return;
    const error = body.error ?? String(status);
    tally.refused[error] = (tally.refused[error] ?? 0) + 1;
  }

  /** One hour of traffic: real enrolments, and the attack's when `attack` is set, in time order. */
  async function playHour(hourStart: number, real: Tally, attack?: Tally) {
    const events: { at: number; run: () => Promise<void> }[] = [];
    for (const [country, perHour] of Object.entries(REAL_PER_HOUR)) {
      for (let index = 0; index < perHour; index++) {
        events.push({
          at: hourStart + Math.floor(random() * HOUR_MS),
          run: async () => {
            const phone = realNumber(country);
            realNumbers.add(phone);
            await enrol(realAccounts[nextReal++ % realAccounts.length] as Account, phone, real);
          },
        });
      }
    }
    if (attack) {
      for (let index = 0; index < ATTACK_PER_HOUR; index++) {
        events.push({
          at: hourStart + Math.floor((index / ATTACK_PER_HOUR) * HOUR_MS),
          run: async () => {
            const target = pickTarget(random());
            const offset = (attackOffsets.get(target) ?? 0) + 1;
            attackOffsets.set(target, offset);
            const account = attackAccounts[nextAttacker++ % attackAccounts.length] as Account;
            await enrol(account, String(target.first + offset), attack);
          },
        });
      }
    }
    events.sort((a, b) => a.at - b.at);
    for (const event of events) {
      clock.moveTo(event.at);
      await event.run();
    }
  }

  const realAccounts = await createAccounts('real', REAL_ACCOUNTS);
  let nextReal = 0;
  let nextAttacker = 0;
  const attackOffsets = new Map<Target, number>();
  const start = clock.now().getTime();
  const history = newTally();
  for (let hour = 0; hour < HISTORY_HOURS; hour++) {
    if (hour % 24 === 0) await refreshTokens(realAccounts);
    await playHour(start + hour * HOUR_MS, history);
  }
  clock.moveTo(start + HISTORY_HOURS * HOUR_MS);
  await refreshTokens(realAccounts);
  const attackAccounts = await createAccounts('attacker', ATTACK_ACCOUNTS);
  const sentBeforeAttack = twilio.messages.length;
  const real = newTally();
  const attack = newTally();
  for (let hour = 0; hour < ATTACK_HOURS; hour++) {
    await playHour(start + (HISTORY_HOURS + hour) * HOUR_MS, real, attack);
  }
  const duringAttack = twilio.messages.slice(sentBeforeAttack);
  real.sent = duringAttack.filter((message) => realNumbers.has(message.to.slice(1))).length;
  attack.sent = duringAttack.length - real.sent;
  const premium = duringAttack.filter((message) => message.to.startsWith('+44909')).length;

  await service.close();
  console.log(`  ${label}: done`);
  return { label, history, real, attack, premium };
}

function describeRefusals(tally: Tally): string {
  const entries = Object.entries(tally.refused).sort(([, a], [, b]) => b - a);
  return entries.length === 0 ? '-' : entries.map(([error, count]) => `${error} ${count}`).join(', ');
}

async function main() {
  console.log(
    `SMS pumping: ${HISTORY_HOURS} h of ordinary enrolments (${Object.values(REAL_PER_HOUR).reduce((a, b) => a + b, 0)} an hour),` +
      ` then ${ATTACK_HOURS} h of attack (${ATTACK_PER_HOUR} enrolment attempts an hour from ${ATTACK_ACCOUNTS} accounts)` +
      ' mixed with the same ordinary traffic.',
  );
  const runs = [await simulate('fraud defence off', DEFENCES_OFF), await simulate('fraud defence at its defaults', {})];
  const rows: [string, (run: (typeof runs)[number]) => string | number][] = [
    ['attack: enrolment attempts', (run) => run.attack.attempts],
    ['attack: SMS sent', (run) => run.attack.sent],
    ['  of which to premium-rate numbers', (run) => run.premium],
    ['attack: refused', (run) => describeRefusals(run.attack)],
    ['real users: enrolment attempts', (run) => run.real.attempts],
    ['real users: SMS sent', (run) => run.real.sent],
    ['real users: refused', (run) => describeRefusals(run.real)],
  ];
  const table = [
    ['', ...runs.map((run) => run.label)],
    ...rows.map(([name, value]) => [name, ...runs.map((run) => String(value(run)))]),
  ];
  const columns = runs.length + 1;
  const widths = Array.from({ length: columns }, (_, column) =>
    Math.max(...table.map((row) => (row[column] ?? '').length)),
  );
  console.log(`\nduring the ${ATTACK_HOURS} attack hours:`);
  for (const row of table) {
    console.log(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  |  ')
        .trimEnd(),
    );
  }
}

await main();
