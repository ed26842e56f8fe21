// The hosted sign-in (CONTRACT §18): between an app's authorization request and the redirect back,
// the person signs in here, on the service's own origin, with the same steps as the account page.
// Everything it calls is the sign-in's API under <base>/mfa/oauth2/sign-in/<id>/.
import { createFactorAdding } from '../shared/add-factor.js';
import { ApiError, readAnswer } from '../shared/api-error.js';
import { createBackupCodesBox } from '../shared/backup-codes.js';
import { byId, whileBusy } from '../shared/dom.js';
import { describeError, type EnrolmentStep } from '../shared/messages.js';
import { clearNotices, placeOf, say, warn } from '../shared/notices.js';
import { createSignIn, type FactorType, type StepAnswer } from '../shared/sign-in.js';

/** What the sign-in's API answers: the next step, or where the browser goes now. */
interface SignInAnswer {
  /** The sign-in used a backup code: how many are left. */
  backup_codes_left?: number;
  /** The first way to verify was just added: its backup codes, shown once (issue 29). */
  backup_codes?: string[];
  step?: 'password' | 'second_factor' | 'enrol';
  username?: string;
  mfa_type?: FactorType;
  mfa_types?: FactorType[];
  webauthn?: Record<string, unknown>;
  factor_types?: FactorType[];
  remember_device_days?: number;
  location?: string;
}

interface Description extends SignInAnswer {
  service_name: string;
  client_name: string;
  csrf_token: string;
  login_hint?: string;
}

const base = new URL('../', location.href);
const id = new URLSearchParams(location.search).get('id') ?? '';
const apiBase = new URL(`mfa/oauth2/sign-in/${encodeURIComponent(id)}/`, base);
let csrfToken = '';
let clientName = 'the app';
/** A backup code signed in: the page shows how many are left before going back to the app. */
let isHoldingForBackupCount = false;
/** Who is signing in, once the password (or the sign-in session) said. */
let currentUsername = '';

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(new URL(path, apiBase), {
      method,
      cache: 'no-store',
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'the service could not be reached');
  }
  try {
    return (await readAnswer(response)) as T;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'sign_in_expired') showExpired();
    throw error;
  }
}

/** The answer as the steps see it; a redirect leaves the page for the app. */
function toStep(answer: SignInAnswer): StepAnswer {
  const back = answer.location;
  if (back && answer.backup_codes_left !== undefined) {
    // Issue 31: the person learns how many backup codes are left before going back to the app.
    const left = answer.backup_codes_left;
    byId('backup-used-count').textContent =
      left === 0
        ? 'It was your last one. Make a new set on your account page now, or you may be locked out.'
        : `${left === 1 ? '1 backup code is' : `${left} backup codes are`} left.${left <= 3 ? ' Make a new set on your account page soon.' : ''}`;
    byId('backup-used-continue').textContent = `Continue to ${clientName}`;
    byId('backup-used-continue').onclick = () => location.assign(back);
    isHoldingForBackupCount = true;
    return { kind: 'done' };
  }
  if (back) {
    location.assign(back);
    return { kind: 'done' };
  }
  if (answer.step === 'enrol') return { kind: 'enrol', factorTypes: answer.factor_types ?? [] };
  if (answer.step === 'second_factor' && answer.mfa_type) {
    return {
      kind: 'second_factor',
      mfaType: answer.mfa_type,
      mfaTypes: answer.mfa_types ?? [answer.mfa_type],
      webauthn: answer.webauthn,
      rememberDeviceDays: answer.remember_device_days,
    };
  }
  throw new Error(`the sign-in answered an unknown step: ${answer.step}`);
}

const post = (path: string, body: unknown) => send<SignInAnswer>('POST', path, body);

const signIn = createSignIn(
  {
    password: async (username, password) => toStep(await post('password', { username, password })),
    secondFactor: async (fields) => toStep(await post('second-factor', fields)),
    async passkeyOptions() {
      const response = await fetch(new URL('mfa/webauthn/sign-in/', base), { method: 'POST', cache: 'no-store' });
      if (!response.ok) throw new ApiError(response.status, `http_${response.status}`, response.statusText);
      return ((await response.json()) as { options: Record<string, unknown> }).options;
    },
    async passkey(assertion) {
      const answer = await post('passkey', { webauthn_response: assertion });
      return { answer: toStep(answer), username: answer.username ?? '' };
    },
  },
  {
    finished() {
      if (!isHoldingForBackupCount) {
        say(`Signed in. Taking you back to ${clientName}…`);
        return;
      }
      byId('backup-used').hidden = false;
      document.title = `You signed in with a backup code · Sign in`;
      byId('backup-used-title').focus();
    },
    enrol(answer, username) {
      currentUsername = username;
      showEnrolment(answer.factorTypes);
    },
    cancelled() {
      void cancel(byId('sign-in'));
    },
  },
);

/** Back to the app, which is told the person gave up (access_denied, or unmet_authentication_requirements). */
async function cancel(container: HTMLElement) {
  await whileBusy(container, async () => {
    try {
      toStep(await post('cancel', {}));
    } catch (error) {
      warn(describeError(error), container);
    }
  });
}

const enrol = byId('enrol');
const adding = createFactorAdding({
  enrol: (path, body) => send('PUT', path, body),
  async act(step: EnrolmentStep, container: HTMLElement | undefined, action: () => Promise<void>) {
    await whileBusy(container, async () => {
      try {
        await action();
      } catch (error) {
        warn(describeError(error, step), placeOf(error, container ?? enrol));
      }
    });
  },
  async added(message, answer) {
    const { backup_codes: codes } = answer as SignInAnswer;
    if (codes) {
      // The first way to verify: its backup codes are shown once, before going back to the app.
      enrol.hidden = true;
      byId('backup').hidden = false;
      byId('backup-intro').textContent =
        `${message} Save these backup codes before you continue: if you lose it, a code signs you in instead.`;
      byId('backup-done').textContent = `I have saved them, continue to ${clientName}`;
      document.title = `Save your backup codes · Sign in`;
      backupBox.show(codes);
      afterBackupCodes = () => follow(answer as SignInAnswer);
      return;
    }
    say(message, enrol);
    follow(answer as SignInAnswer);
  },
});

/** What the backup codes' "continue" does: the sign-in's next step, kept while the codes are on screen. */
let afterBackupCodes = () => {};
const backupBox = createBackupCodesBox({
  owner: () => currentUsername,
  saved: () => afterBackupCodes(),
});

/** After a factor was added: the next step, or the app. */
function follow(answer: SignInAnswer) {
  const next = toStep(answer);
  if (next.kind === 'second_factor') {
    enrol.hidden = true;
    signIn.continueWith(currentUsername, next);
  } else if (next.kind === 'enrol') {
    showEnrolment(next.factorTypes);
  }
}

function showEnrolment(types: FactorType[]) {
  byId('sign-in').hidden = true;
  const onlyPasskeys = types.length === 1 && types[0] === 'webauthn';
  byId('enrol-title').textContent = onlyPasskeys ? 'Add a passkey' : 'Add a way to verify';
  byId('enrol-intro').textContent = onlyPasskeys
    ? `${clientName} asks for a passkey, which cannot be phished. Add one to this account to continue.`
    : `${clientName} asks for two-step verification. Add a way to verify to continue; signing in will ask for it after your password.`;
  adding.closeForms();
  adding.offer(types);
  enrol.hidden = false;
  document.title = `${byId('enrol-title').textContent} · Sign in`;
  byId('enrol-title').focus();
}

function showExpired() {
  for (const section of ['sign-in', 'enrol', 'backup', 'backup-used']) byId(section).hidden = true;
  byId('expired').hidden = false;
  document.title = 'This sign-in has expired';
  byId('expired-title').focus();
}

byId('enrol-cancel').addEventListener('click', () => void cancel(enrol));

async function open() {
  let description: Description;
  try {
    description = await send<Description>('GET', '');
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 'sign_in_expired')) warn(describeError(error));
    return;
  }
  csrfToken = description.csrf_token;
  clientName = description.client_name;
  byId('service-name').textContent = description.service_name;
  clearNotices();
  currentUsername = description.username ?? '';
  if (description.step === 'password') {
    signIn.start({
      title: 'Sign in',
      intro: `Sign in to continue to ${clientName}.`,
      documentTitle: `Sign in to ${clientName}`,
      cancellable: true,
      offersPasskey: true,
    });
    const hint = byId<HTMLInputElement>('username');
    if (description.login_hint) {
      hint.value = description.login_hint;
      byId('password').focus();
    }
    return;
  }
  byId('sign-in-title').textContent = 'Sign in';
  byId('sign-in-intro').textContent = `Continue to ${clientName} as ${currentUsername}.`;
  document.title = `Sign in to ${clientName}`;
  if (description.step === 'enrol') {
    showEnrolment(description.factor_types ?? []);
    return;
  }
  // The password was given before (a sign-in session): only the second factor is missing. An SMS
  // or passkey challenge is made now, as the password step would have made it.
  let answer: StepAnswer = toStep(description);
  if (answer.kind === 'second_factor' && answer.mfaType !== 'totp') {
    try {
      answer = toStep(await post('second-factor', { mfa_type: answer.mfaType }));
    } catch (error) {
      warn(describeError(error, 'code'), byId('sign-in'));
    }
  }
  signIn.continueWith(currentUsername, answer);
}

void open();
