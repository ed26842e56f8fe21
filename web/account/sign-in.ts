import { type PublicKeyCredentialRequestOptionsJSON, startAuthentication } from '@simplewebauthn/browser';
import { ApiError } from '../shared/api-error.js';
import { byId, digitsOf, el, whileBusy } from '../shared/dom.js';
import { clearNotices, say, warn } from '../shared/notices.js';
import { type Api, type FactorType, isTokens, type MfaRequired, type StepUpChallenge, type Tokens } from './api.js';
import { describeError, type Step } from './messages.js';

type Method = FactorType | 'backup';

/** One login in progress: the password is kept (in memory) only until the second step ends. */
interface Attempt {
  username: string;
  password: string;
  /** RFC 9470 `acr_values` and `max_age` when re-authenticating. */
  extra: Record<string, string>;
  methods: FactorType[];
  method: Method;
  /** Request options for the next passkey assertion; each set is good for one try. */
  webauthnOptions?: Record<string, unknown>;
  /** The login's SMS failed, so `methods` is a guess: the service says which the person lacks when asked. */
  didSmsFail?: boolean;
}

/**
 * What the password grant answers when the password was right, the default factor is SMS, and its
 * text could not go out: the second step must still open, for a late code or another factor.
 */
const LOGIN_SMS_FAILURES = new Set([
  'sms_unavailable',
  'sms_timeout',
  'sms_rate_limited',
  'phone_number_rejected',
  'phone_number_not_allowed',
]);

const METHOD_CHOICES: Record<Method, string> = {
  webauthn: 'Use a passkey',
  totp: 'Use your authenticator app',
  sms: 'Text a code to my phone',
  backup: 'Use a backup code',
};

export interface SignInHooks {
  /** A first login finished: show the account. */
  signedIn(username: string): void;
  /** Shows the account again after a re-authentication, finished or cancelled. */
  backToAccount(): void;
}

/**
 * The sign-in screen: the password, then the second factor the service asks for (or another the
 * person chooses). The same screen re-authenticates when a sensitive call needs a fresh login.
 */
export function createSignIn(api: Api, hooks: SignInHooks) {
  const section = byId('sign-in');
  const title = byId('sign-in-title');
  const intro = byId('sign-in-intro');
  const passwordForm = byId<HTMLFormElement>('password-form');
  const usernameInput = byId<HTMLInputElement>('username');
  const passwordInput = byId<HTMLInputElement>('password');
  const cancelSignIn = byId<HTMLButtonElement>('sign-in-cancel');
  const factorForm = byId<HTMLFormElement>('factor-form');
  const factorTitle = byId('factor-title');
  const factorPrompt = byId('factor-prompt');
  const codeField = byId('code-field');
  const codeLabel = byId('code-label');
  const codeInput = byId<HTMLInputElement>('code');
  const codeHint = byId('code-hint');
  const factorSubmit = byId<HTMLButtonElement>('factor-submit');
  const resend = byId<HTMLButtonElement>('factor-resend');
  const factorCancel = byId<HTMLButtonElement>('factor-cancel');
  const choices = byId('factor-choices');

  let attempt: Attempt | undefined;
  /** Set while re-authenticating: settles the sensitive call that is waiting. */
  let stepUpSettle: ((done: boolean) => void) | undefined;
  /** What had focus when the re-authentication began, to go back to. */
  let focusBefore: HTMLElement | undefined;
  /** RFC 9470 `acr_values` and `max_age` the re-authentication asks for. */
  let stepUpExtra: Record<string, string> = {};

  function showPasswordStep() {
    attempt = undefined;
    passwordInput.value = '';
    codeInput.value = '';
    factorForm.hidden = true;
    passwordForm.hidden = false;
  }

  /** The sign-in screen, empty. */
  function start(): void {
    settleStepUp(false);
    showPasswordStep();
    title.textContent = 'Sign in';
    intro.textContent =
      'Sign in to manage how you prove it is you: passkeys, authenticator apps, SMS codes and backup codes.';
    usernameInput.readOnly = false;
    usernameInput.value = '';
    cancelSignIn.hidden = true;
    section.hidden = false;
    document.title = 'Sign in · Account security';
    usernameInput.focus();
  }

  /** Re-authenticates `username` (RFC 9470): true once new tokens are in use, false if cancelled. */
  function stepUp(username: string, challenge: StepUpChallenge): Promise<boolean> {
    settleStepUp(false);
    focusBefore = document.activeElement instanceof HTMLElement ? document.activeElement : undefined;
    showPasswordStep();
    title.textContent = 'Confirm it is you';
    intro.textContent = challenge.acrValues
      ? 'This change needs a recent sign-in with your second factor. Enter your password, then verify as you do when you sign in.'
      : 'This change needs a recent sign-in. Enter your password again.';
    usernameInput.value = username;
    usernameInput.readOnly = true;
    cancelSignIn.hidden = false;
    section.hidden = false;
    document.title = 'Confirm it is you · Account security';
    passwordInput.focus();
    stepUpExtra = challenge.acrValues
      ? { acr_values: challenge.acrValues, max_age: challenge.maxAge }
      : { max_age: challenge.maxAge };
    return new Promise<boolean>((resolve) => {
      stepUpSettle = resolve;
    });
  }

  function settleStepUp(done: boolean) {
    const settle = stepUpSettle;
    stepUpSettle = undefined;
    stepUpExtra = {};
    settle?.(done);
  }

  function leaveStepUp(done: boolean) {
    section.hidden = true;
    showPasswordStep();
    hooks.backToAccount();
    if (focusBefore?.isConnected && !focusBefore.closest('[hidden]')) focusBefore.focus();
    focusBefore = undefined;
    settleStepUp(done);
  }

  async function finish(tokens: Tokens, username: string) {
    const previous = api.useTokens(tokens);
    if (stepUpSettle) {
      // The page holds one login at a time: the one replaced is ended, not left to linger.
      if (previous) api.revoke(previous).catch(() => undefined);
      leaveStepUp(true);
      return;
    }
    section.hidden = true;
    showPasswordStep();
    clearNotices();
    hooks.signedIn(username);
  }

  /** The password grant again, with what the second step adds. */
  function grant(fields: Record<string, unknown>): Promise<Tokens | MfaRequired> {
    if (!attempt) throw new Error('no login in progress');
    return api.tokenRequest({
      grant_type: 'password',
      username: attempt.username,
      password: attempt.password,
      ...attempt.extra,
      ...fields,
    });
  }

  function showFactorStep(answer: MfaRequired) {
    if (!attempt) return;
    attempt.methods = answer.mfa_types ?? [answer.mfa_type];
    attempt.method = answer.mfa_type;
    attempt.webauthnOptions = answer.webauthn;
    attempt.didSmsFail = false;
    showFactorForm();
    if (answer.mfa_type === 'sms') say('We sent a code to your phone by SMS.', section);
  }

  function showFactorForm() {
    passwordForm.hidden = true;
    factorForm.hidden = false;
    clearNotices();
    renderMethod();
  }

  function renderMethod() {
    if (!attempt) return;
    const method = attempt.method;
    codeInput.value = '';
    codeField.hidden = method === 'webauthn';
    resend.hidden = method !== 'sms';
    codeHint.textContent = '';
    if (method === 'webauthn') {
      factorTitle.textContent = 'Second step: your passkey';
      factorPrompt.textContent = 'Use your passkey: your device or security key asks you to confirm.';
      factorSubmit.textContent = 'Use my passkey';
    } else if (method === 'backup') {
      factorTitle.textContent = 'Second step: a backup code';
      factorPrompt.textContent = 'Enter one of your backup codes. Each code works once.';
      codeLabel.textContent = 'Backup code (12 digits)';
      codeHint.textContent = 'Spaces are fine.';
      factorSubmit.textContent = 'Verify';
    } else {
      const sms = method === 'sms';
      factorTitle.textContent = sms ? 'Second step: a code by SMS' : 'Second step: your authenticator app';
      factorPrompt.textContent = !sms
        ? 'Enter the 6-digit code your authenticator app shows for this account.'
        : attempt.didSmsFail
          ? 'If the code reaches your phone, enter it here. Otherwise ask for a new one, or choose another way below.'
          : 'Enter the 6-digit code we sent to your phone. It works for 5 minutes.';
      codeLabel.textContent = sms ? 'Code from the SMS' : 'Code from the app';
      factorSubmit.textContent = 'Verify';
    }
    const others: Method[] = [...attempt.methods.filter((type) => type !== method), 'backup'];
    choices.replaceChildren(
      ...others
        .filter((other) => other !== method)
        .map((other) => {
          const choice = el('button', { type: 'button', class: 'link' }, METHOD_CHOICES[other]);
          choice.addEventListener('click', () => void choose(other));
          return el('li', {}, choice);
        }),
    );
    (method === 'webauthn' ? factorSubmit : codeInput).focus();
  }

  /** Switches to another factor; for SMS and passkeys the service must send a code or options first. */
  async function choose(method: Method) {
    if (!attempt) return;
    const current = attempt;
    if (method === 'totp' || method === 'backup') {
      current.method = method;
      clearNotices();
      renderMethod();
      return;
    }
    await whileBusy(factorForm, async () => {
      try {
        const answer = await grant({ mfa_type: method });
        if (isTokens(answer)) return finish(answer, current.username);
        current.methods = answer.mfa_types ?? [answer.mfa_type];
        current.method = answer.mfa_type;
        current.webauthnOptions = answer.webauthn;
        current.didSmsFail = false;
        renderMethod();
        if (method === 'sms') {
          say(
            'We sent a code to your phone by SMS. (If you asked in the last 30 seconds, the code already sent works.)',
            section,
          );
        } else {
          clearNotices();
        }
      } catch (error) {
        warn(describeError(error, 'other'), section);
      }
    });
  }

  passwordForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const username = usernameInput.value.trim();
    const password = passwordInput.value;
    if (!username || !password) {
      warn('Enter your username and your password.', section);
      (username ? passwordInput : usernameInput).focus();
      return;
    }
    const extra = stepUpExtra;
    void whileBusy(passwordForm, async () => {
      try {
        const answer = await api.tokenRequest({ grant_type: 'password', username, password, ...extra });
        if (isTokens(answer)) return finish(answer, username);
        attempt = { username, password, extra, methods: [], method: answer.mfa_type };
        showFactorStep(answer);
      } catch (error) {
        if (error instanceof ApiError && LOGIN_SMS_FAILURES.has(error.code)) {
          // The service does not say which other factors the person has: all are offered, and
          // asking for one they lack is answered with invalid_request, shown like any refusal.
          attempt = {
            username,
            password,
            extra,
            methods: ['sms', 'totp', 'webauthn'],
            method: 'sms',
            didSmsFail: true,
          };
          showFactorForm();
          warn(describeError(error, 'code'), section);
          return;
        }
        warn(describeError(error, 'password'), section);
        passwordInput.select();
        passwordInput.focus();
      }
    });
  });

  factorForm.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!attempt) return;
    const current = attempt;
    const method = current.method;
    const code = digitsOf(codeInput.value);
    if (method === 'backup' && !/^\d{12}$/.test(code)) {
      warn('A backup code has 12 digits.', section);
      codeInput.focus();
      return;
    }
    if ((method === 'sms' || method === 'totp') && !/^\d{6}$/.test(code)) {
      warn('Enter the 6 digits of the code.', section);
      codeInput.focus();
      return;
    }
    const step: Step = method === 'webauthn' ? 'passkey' : method === 'backup' ? 'backup_code' : 'code';
    void whileBusy(factorForm, async () => {
      try {
        let answer: Tokens | MfaRequired;
        if (method === 'webauthn') {
          // Options are good for one assertion: a second try asks the service for new ones.
          let options = current.webauthnOptions;
          current.webauthnOptions = undefined;
          if (!options) {
            const fresh = await grant({ mfa_type: 'webauthn' });
            if (isTokens(fresh)) return finish(fresh, current.username);
            options = fresh.webauthn;
          }
          const assertion = await startAuthentication({
            optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON,
          });
          answer = await grant({ mfa_type: 'webauthn', webauthn_response: assertion });
        } else if (method === 'backup') {
          answer = await grant({ backup_code: code });
        } else {
          answer = await grant({ mfa_type: method, mfa_code: code });
        }
        if (isTokens(answer)) return finish(answer, current.username);
        showFactorStep(answer);
      } catch (error) {
        warn(describeError(error, step), section);
        codeInput.value = '';
        if (!codeField.hidden) codeInput.focus();
      }
    });
  });

  resend.addEventListener('click', () => void choose('sms'));

  factorCancel.addEventListener('click', () => {
    if (stepUpSettle) return leaveStepUp(false);
    clearNotices();
    showPasswordStep();
    usernameInput.focus();
  });

  cancelSignIn.addEventListener('click', () => leaveStepUp(false));

  return { start, stepUp };
}

export type SignIn = ReturnType<typeof createSignIn>;
