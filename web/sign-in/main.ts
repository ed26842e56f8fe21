// The hosted sign-in (CONTRACT §18): between an app's authorization request and the redirect back,
// the person signs in here, on the service's own origin, with the same steps as the account page.
// Everything it calls is the sign-in's API under <base>/mfa/oauth2/sign-in/<id>/.
import { ApiError, readAnswer } from '../shared/api-error.js';
import { byId, setText, setTitle, whileBusy } from '../shared/dom.js';
import { addEnglish, t, useLanguage } from '../shared/i18n.js';
import { describeError } from '../shared/messages.js';
import { importChecked } from '../shared/modules.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import { createSignIn, type FactorType, type StepAnswer } from '../shared/sign-in.js';
import type { Enrolment } from './enrolment.js';
import english from './locales/en.json' with { type: 'json' };

addEnglish(english);

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
  /** The language the service chose for this sign-in (ui_locales, the user's, Accept-Language). */
  language: string;
  client_name: string;
  csrf_token: string;
  login_hint?: string;
}

const DESCRIPTION_COOKIE = location.protocol === 'https:' ? '__Host-mfa-sign-in' : 'mfa-sign-in';

/**
 * The description the authorization endpoint handed over with the page (a cookie holding
 * `<id>.<JSON>`, the JSON the answer of GET <apiBase>, left out when too long for a cookie): the
 * sign-in's id and its JSON still URL-encoded (decoded where it is parsed, so that a malformed
 * cookie falls back to the API), the cookie left in place until the page knows it is its own.
 */
function readHandedOver(): { id: string; json: string } | undefined {
  const value = document.cookie
    .split('; ')
    .find((cookie) => cookie.startsWith(`${DESCRIPTION_COOKIE}=`))
    ?.slice(DESCRIPTION_COOKIE.length + 1);
  const separator = value?.indexOf('.') ?? -1;
  if (value === undefined || separator < 0) return undefined;
  return { id: value.slice(0, separator), json: value.slice(separator + 1) };
}

const handed = readHandedOver();
/** The page's own address names its sign-in; the authorization endpoint's answer hands it over. */
const addressed = new URLSearchParams(location.search).get('id');
const id = addressed ?? handed?.id ?? '';
// Answered by the authorization endpoint, the page takes its own address (/sign-in/?id=…, its
// <base> plus the id): a reload there asks the API for this sign-in instead of starting another.
if (addressed === null && id)
  history.replaceState(null, '', new URL(`?id=${encodeURIComponent(id)}`, document.baseURI));
/** Every page is served at <base>/<page>/, with the API at <base>/mfa/…. */
const base = new URL('../', document.baseURI);
const apiBase = new URL(`mfa/oauth2/sign-in/${encodeURIComponent(id)}/`, base);
let csrfToken = '';
/** The app's name, once the description said it. */
let clientName = '';
/** The service's name (SERVICE_NAME), once the description said it: in the header and each title. */
let serviceName = '';
const client = () => clientName || t('sign-in.theApp');
const service = () => serviceName || t('sign-in.title');
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
    setText(byId('backup-used-count'), () =>
      left === 0
        ? t('sign-in.backupUsed.last')
        : left <= 3
          ? `${t('sign-in.backupUsed.left', { count: left })} ${t('sign-in.backupUsed.soon')}`
          : t('sign-in.backupUsed.left', { count: left }),
    );
    setText(byId('backup-used-continue'), () => t('sign-in.backupUsed.continue', { client: client() }));
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
        say(t('sign-in.signedIn', { client: client() }));
        return;
      }
      byId('backup-used').hidden = false;
      setTitle(() => t('sign-in.backupUsed.documentTitle', { service: service() }));
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

/**
 * Adding a factor during the sign-in (web/sign-in/enrolment.ts), loaded when a sign-in first
 * reaches that step: few do, and its code (the forms, the QR code, passkey registration) and texts
 * are a third of the page's script.
 */
let enrolment: Promise<Enrolment> | undefined;

function loadEnrolment(): Promise<Enrolment> {
  enrolment ??= importChecked('enrolment', () => import('./enrolment.js')).then(({ createEnrolment }) =>
    createEnrolment({
      enrol: (path, body) => send('PUT', path, body),
      client,
      service,
      username: () => currentUsername,
      follow: (answer) => follow(answer as SignInAnswer),
    }),
  );
  return enrolment;
}

function showEnrolment(types: FactorType[]) {
  const section = byId('sign-in');
  void whileBusy(section, async () => {
    try {
      (await loadEnrolment()).show(types);
    } catch (error) {
      // Not to be had (the network, or a file that failed its hash): said where the sign-in was.
      section.hidden = false;
      warn(describeError(error), section);
    }
  });
}

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

function showExpired() {
  for (const section of ['sign-in', 'enrol', 'backup', 'backup-used']) byId(section).hidden = true;
  byId('expired').hidden = false;
  setTitle(() => t('sign-in.expired.title'));
  byId('expired-title').focus();
}

byId('enrol-cancel').addEventListener('click', () => void cancel(enrol));

/**
 * The page's language: the one the service chose for this sign-in (the authorization request's
 * ui_locales, then the user's, then Accept-Language); the browser's own when the sign-in could not
 * be described (expired, unreachable). It stays for the whole sign-in: the page does not change
 * language under the person's hands once the password says who they are.
 */
async function showInLanguage(description?: Description) {
  await useLanguage(description ? [description.language] : navigator.languages);
}

/**
 * The handed-over description, when it is this sign-in's: taken once (the cookie deleted), so that
 * a reload asks the API; undefined when the cookie held none (too long) or another sign-in's.
 */
function handedOver(): Description | undefined {
  if (handed?.id !== id) return undefined;
  const secure = location.protocol === 'https:';
  // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is not in every browser the page serves.
  document.cookie = `${DESCRIPTION_COOKIE}=; Max-Age=0; Path=/; SameSite=Lax${secure ? '; Secure' : ''}`;
  try {
    return handed.json ? (JSON.parse(decodeURIComponent(handed.json)) as Description) : undefined;
  } catch {
    return undefined; // not what the service wrote: the API says it
  }
}

async function open() {
  if (!id) {
    // No sign-in named: an address without ?id=, or a page whose handed-over cookie another
    // authorization request's page took first (README, "The browser flow").
    await showInLanguage();
    showExpired();
    return;
  }
  let description: Description;
  try {
    description = handedOver() ?? (await send<Description>('GET', ''));
  } catch (error) {
    await showInLanguage();
    if (error instanceof ApiError && error.code === 'sign_in_expired') showExpired();
    else warn(describeError(error));
    return;
  }
  csrfToken = description.csrf_token;
  clientName = description.client_name;
  serviceName = description.service_name;
  await showInLanguage(description);
  // Issue 31: the service's name heads the card and ends each title.
  setText(byId('service-name'), service);
  clearNotices();
  currentUsername = description.username ?? '';
  const documentTitle = () => t('sign-in.documentTitle', { client: client(), service: service() });
  if (description.step === 'password') {
    signIn.start({
      title: () => t('sign-in.title'),
      intro: () => t('sign-in.intro', { client: client() }),
      documentTitle,
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
  setText(byId('sign-in-title'), () => t('sign-in.title'));
  setText(byId('sign-in-intro'), () => t('sign-in.continueAs', { client: client(), name: currentUsername }));
  setTitle(documentTitle);
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
