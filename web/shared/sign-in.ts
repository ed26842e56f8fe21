// The sign-in steps every page shows (CONTRACT §17, §18): the password, then the second factor the
// service asks for, or another the person chooses. What each step is sent to is the page's own
// (the account page: the password grant; the hosted sign-in: its API), behind SignInBackend.
import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  type PublicKeyCredentialRequestOptionsJSON,
  startAuthentication,
  WebAuthnAbortService,
} from '@simplewebauthn/browser';
import { ApiError } from './api-error.js';
import { byId, closeOnEscape, countDown, digitsOf, el, setText, setTitle, whileBusy } from './dom.js';
import { onLanguageChange, t, translateWithin } from './i18n.js';
import { describeError, type SignInStep } from './messages.js';
import { clearNotices, say, warn } from './notices.js';
import { askForResetLink } from './password-reset.js';

/**
 * Every page is served at <base>/<page>/, with the API at <base>/mfa/…; the hosted sign-in also
 * at the authorization endpoint, with a <base> element naming its folder (document.baseURI).
 */
const serviceBase = new URL('../', document.baseURI);

export type FactorType = 'sms' | 'totp' | 'webauthn' | 'email';
export type Method = FactorType | 'backup';

/** What the service answers a step: done, the second factor it asks for, or a factor to add first. */
export type StepAnswer =
  | { kind: 'done' }
  | {
      kind: 'second_factor';
      mfaType: FactorType;
      mfaTypes: FactorType[];
      webauthn?: Record<string, unknown>;
      /** The app lets this browser skip the step for so many days, if the person ticks the box (CONTRACT §19). */
      rememberDeviceDays?: number;
    }
  | { kind: 'enrol'; factorTypes: FactorType[] };

/** The second step's fields, as the token endpoint and the hosted sign-in's API both name them. */
export interface SecondFactorFields {
  mfa_type?: FactorType;
  mfa_code?: string;
  backup_code?: string;
  webauthn_response?: unknown;
  /** "Don't ask for a second factor on this device": sent by the hosted sign-in only. */
  remember_device?: boolean;
}

/** Where the steps go. */
export interface SignInBackend {
  password(username: string, password: string): Promise<StepAnswer>;
  secondFactor(fields: SecondFactorFields): Promise<StepAnswer>;
  /** Options for a sign-in with a passkey alone (CONTRACT §19), and where its assertion goes. */
  passkeyOptions(): Promise<Record<string, unknown>>;
  passkey(assertion: unknown): Promise<{ answer: StepAnswer; username: string }>;
}

export interface SignInHooks {
  /** The sign-in is done (the backend holds what it gave); `method`: the second step's, if there was one. */
  finished(username: string, method?: Method): void;
  /** The service asks for a factor to be added before the sign-in can finish (hosted sign-in only). */
  enrol?(answer: Extract<StepAnswer, { kind: 'enrol' }>, username: string): void;
  /** The person gave up at the second step. */
  cancelled(): void;
}

/**
 * What the screen says and allows, for a first sign-in or a re-authentication. Its texts are
 * strings, or functions of the page's language (`() => t('…')`) that are asked again when it changes.
 */
export interface SignInScreen {
  title: string | (() => string);
  intro: string | (() => string);
  documentTitle: string | (() => string);
  /** Given: the username is shown, read only (a re-authentication). */
  username?: string;
  /** Shown under the password form; false hides it. */
  cancellable: boolean;
  /** Offers "Sign in with a passkey" and passkeys in the username's autofill (not for a re-authentication). */
  offersPasskey: boolean;
  /** The last digits of the account's phone, when the page knows them: the SMS step names the phone. */
  phoneEnding?: string;
}

/** One sign-in in progress. */
interface Attempt {
  username: string;
  methods: FactorType[];
  method: Method;
  /** Request options for the next passkey assertion; each set is good for one try. */
  webauthnOptions?: Record<string, unknown>;
  /** The sign-in's SMS or mail failed, so `methods` is a guess: the service says which the person lacks when asked. */
  didDeliveryFail?: boolean;
}

/**
 * What the service answers when the password was right, the default factor is SMS (or email
 * codes), and its code could not go out: the second step must still open, for a late code or
 * another factor.
 */
const SIGN_IN_DELIVERY_FAILURES: Record<string, 'sms' | 'email'> = {
  sms_unavailable: 'sms',
  sms_timeout: 'sms',
  sms_rate_limited: 'sms',
  phone_number_rejected: 'sms',
  phone_number_not_allowed: 'sms',
  mail_unavailable: 'email',
  email_rate_limited: 'email',
};

/** "Use a passkey", "Use a backup code" …: the other ways the second step offers. */
function choiceText(method: Method): string {
  switch (method) {
    case 'webauthn':
      return t('signIn.choose.webauthn');
    case 'totp':
      return t('signIn.choose.totp');
    case 'sms':
      return t('signIn.choose.sms');
    case 'email':
      return t('signIn.choose.email');
    case 'backup':
      return t('signIn.choose.backup');
  }
}

/**
 * The sign-in screen of the page (the elements of #sign-in: #password-form, #factor-form …): the
 * password, then the second factor the service asks for (or another the person chooses).
 */
export function createSignIn(backend: SignInBackend, hooks: SignInHooks) {
  const section = byId('sign-in');
  const title = byId('sign-in-title');
  const intro = byId('sign-in-intro');
  const passwordForm = byId<HTMLFormElement>('password-form');
  const usernameInput = byId<HTMLInputElement>('username');
  const passwordInput = byId<HTMLInputElement>('password');
  const cancelSignIn = byId<HTMLButtonElement>('sign-in-cancel');
  const factorForm = byId<HTMLFormElement>('factor-form');
  const rememberField = byId('remember-field');
  const rememberBox = byId<HTMLInputElement>('remember-device');
  const rememberLabel = byId('remember-label');
  const factorTitle = byId('factor-title');
  const factorPrompt = byId('factor-prompt');
  const factorWho = byId('factor-who');
  const codeField = byId('code-field');
  const codeLabel = byId('code-label');
  const codeInput = byId<HTMLInputElement>('code');
  const codeHint = byId('code-hint');
  const factorSubmit = byId<HTMLButtonElement>('factor-submit');
  const resend = byId<HTMLButtonElement>('factor-resend');
  const factorCancel = byId<HTMLButtonElement>('factor-cancel');
  const choices = byId('factor-choices');
  const passkeyBox = byId('passkey-sign-in-box');
  const passkeyButton = byId<HTMLButtonElement>('passkey-sign-in');
  const forgotOpen = byId<HTMLButtonElement>('forgot-open');
  const forgotForm = byId<HTMLTemplateElement>('forgot-template').content.firstElementChild as HTMLFormElement;
  const forgotName = forgotForm.querySelector<HTMLInputElement>('#forgot-name') as HTMLInputElement;
  const forgotBack = forgotForm.querySelector<HTMLButtonElement>('#forgot-back') as HTMLButtonElement;

  let attempt: Attempt | undefined;
  /** Passkeys are offered on this screen (the username's autofill and the button). */
  let isOfferingPasskey = false;
  /** What the screen was told of the account's phone. */
  let phoneEnding: string | undefined;
  /** Ends the countdown of "Send a new code" while the service's cooldown lasts. */
  let endCooldown: (() => void) | undefined;
  /** How many days the app lets this browser skip the second step, when it does. */
  let rememberDays: number | undefined;

  /** Back to the password step, empty; the username's autofill offers passkeys again. */
  function showPasswordStep() {
    resetToPasswordStep();
    if (isOfferingPasskey) void offerPasskeyAutofill();
  }

  function resetToPasswordStep() {
    attempt = undefined;
    passwordInput.value = '';
    codeInput.value = '';
    factorForm.hidden = true;
    forgotForm.remove();
    passwordForm.hidden = false;
  }

  /** The password step, as `screen` says. */
  function start(screen: SignInScreen): void {
    isOfferingPasskey = screen.offersPasskey && browserSupportsWebAuthn();
    phoneEnding = screen.phoneEnding;
    passkeyBox.hidden = !isOfferingPasskey;
    showPasswordStep();
    setText(title, screen.title);
    setText(intro, screen.intro);
    usernameInput.readOnly = screen.username !== undefined;
    usernameInput.value = screen.username ?? '';
    cancelSignIn.hidden = !screen.cancellable;
    // A re-authentication knows the account: a reset from there would end the very login it serves.
    forgotOpen.hidden = screen.username !== undefined;
    section.hidden = false;
    setTitle(screen.documentTitle);
    (screen.username === undefined ? usernameInput : passwordInput).focus();
  }

  /** Goes on from the password step another page already passed (a sign-in session): the second step. */
  function continueWith(username: string, answer: StepAnswer): void {
    section.hidden = false;
    passwordForm.hidden = true;
    phoneEnding = undefined;
    attempt = { username, methods: [], method: 'totp' };
    follow(answer, username);
  }

  /** Done with signing in: a passkey autofill still waiting would sign in again, so it ends. */
  function hide(): void {
    section.hidden = true;
    resetToPasswordStep();
    WebAuthnAbortService.cancelCeremony();
  }

  /**
   * Conditional mediation (CONTRACT §19): the browser lists the site's passkeys in the username
   * field's autofill; picking one signs in as the button does. It waits in the background until
   * then, and gives way to any other ceremony (the library aborts it).
   */
  async function offerPasskeyAutofill() {
    if (!(await browserSupportsWebAuthnAutofill())) return;
    try {
      const options = await backend.passkeyOptions();
      const assertion = await startAuthentication({
        optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON,
        useBrowserAutofill: true,
      });
      await signInWithAssertion(assertion);
    } catch {
      // Aborted for another ceremony, or nothing picked: the other ways stay on screen.
    }
  }

  /** "Sign in with a passkey": no username, the browser asks which passkey. */
  passkeyButton.addEventListener('click', () => {
    void whileBusy(passwordForm, async () => {
      try {
        const options = await backend.passkeyOptions();
        const assertion = await startAuthentication({
          optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON,
        });
        await signInWithAssertion(assertion);
      } catch (error) {
        warn(describeError(error, 'passkey'), section);
      }
    });
  });

  async function signInWithAssertion(assertion: unknown) {
    const { answer, username } = await backend.passkey(assertion);
    attempt = { username, methods: [], method: 'webauthn' };
    follow(answer, username);
  }

  /** Acts on the service's answer to a step. */
  function follow(answer: StepAnswer, username: string): void {
    if (answer.kind === 'done') {
      const method = factorForm.hidden ? undefined : attempt?.method;
      hide();
      clearNotices();
      hooks.finished(username, method);
      return;
    }
    if (answer.kind === 'enrol') {
      if (!hooks.enrol) throw new Error('this page cannot add a factor while signing in');
      factorForm.hidden = true;
      passwordForm.hidden = true;
      hooks.enrol(answer, username);
      return;
    }
    showFactorStep(answer);
  }

  function showFactorStep(answer: Extract<StepAnswer, { kind: 'second_factor' }>) {
    if (!attempt) return;
    attempt.methods = answer.mfaTypes;
    attempt.method = answer.mfaType;
    attempt.webauthnOptions = answer.webauthn;
    attempt.didDeliveryFail = false;
    rememberDays = answer.rememberDeviceDays;
    rememberField.hidden = rememberDays === undefined;
    rememberBox.checked = false;
    // The prompt says where the code went, once: the code field is described by it.
    showFactorForm();
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
    endCooldown?.();
    endCooldown = undefined;
    codeInput.value = '';
    codeField.hidden = method === 'webauthn';
    resend.hidden = method !== 'sms' && method !== 'email';
    drawMethod();
    (method === 'webauthn' ? factorSubmit : codeInput).focus();
  }

  /** The second step's texts for the method chosen, in the page's language (drawn again when it changes). */
  function drawMethod() {
    if (!attempt) return;
    const { method, didDeliveryFail, username } = attempt;
    // "Signing in as <strong>name</strong>", the name wherever the language puts it.
    const [before = '', after = ''] = t('signIn.factor.signingInAs', { name: '\u0000' }).split('\u0000');
    factorWho.replaceChildren(before, el('strong', { id: 'factor-username' }, username), after);
    rememberLabel.textContent =
      rememberDays === undefined
        ? t('signIn.factor.remember')
        : t('signIn.factor.rememberFor', { count: rememberDays });
    codeHint.textContent = '';
    factorSubmit.textContent = t('signIn.factor.verify');
    if (method === 'webauthn') {
      factorTitle.textContent = t('signIn.passkey.title');
      factorPrompt.textContent = t('signIn.passkey.prompt');
      factorSubmit.textContent = t('signIn.passkey.submit');
    } else if (method === 'backup') {
      factorTitle.textContent = t('signIn.backup.title');
      factorPrompt.textContent = t('signIn.backup.prompt');
      codeLabel.textContent = t('signIn.backup.label');
      codeHint.textContent = t('signIn.backup.hint');
    } else if (method === 'email') {
      factorTitle.textContent = t('signIn.email.title');
      factorPrompt.textContent = didDeliveryFail ? t('signIn.email.promptFailed') : t('signIn.email.prompt');
      codeLabel.textContent = t('signIn.email.label');
    } else if (method === 'sms') {
      const ending = phoneEnding;
      factorTitle.textContent = t('signIn.sms.title');
      if (didDeliveryFail)
        factorPrompt.textContent = ending
          ? t('signIn.sms.promptFailedEnding', { ending })
          : t('signIn.sms.promptFailed');
      else factorPrompt.textContent = ending ? t('signIn.sms.promptEnding', { ending }) : t('signIn.sms.prompt');
      codeLabel.textContent = t('signIn.sms.label');
    } else {
      factorTitle.textContent = t('signIn.totp.title');
      factorPrompt.textContent = t('signIn.totp.prompt');
      codeLabel.textContent = t('signIn.totp.label');
    }
    const others: Method[] = [...attempt.methods.filter((type) => type !== method), 'backup'];
    choices.replaceChildren(
      ...others
        .filter((other) => other !== method)
        .map((other) => {
          const choice = el('button', { type: 'button', class: 'link' }, choiceText(other));
          choice.addEventListener('click', () => void choose(other));
          return el('li', {}, choice);
        }),
    );
  }

  onLanguageChange(() => {
    if (!factorForm.hidden) drawMethod();
  });

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
    const isResend = method === current.method;
    let cooldownSeconds: number | undefined;
    await whileBusy(factorForm, async () => {
      try {
        const answer = await backend.secondFactor({ mfa_type: method });
        if (answer.kind !== 'second_factor') return follow(answer, current.username);
        current.methods = answer.mfaTypes;
        current.method = answer.mfaType;
        current.webauthnOptions = answer.webauthn;
        current.didDeliveryFail = false;
        renderMethod();
        // A first code: the prompt says it was sent. A new one: only this says so.
        if (isResend) say(t('signIn.factor.newCodeSent'), section);
        else clearNotices();
      } catch (error) {
        // Issue 31: inside the service's cooldown nothing went out, and the code sent still works:
        // information, with the button counting down until a new code may be asked for.
        const isCooldown = isResend && error instanceof ApiError && /_cooldown$/.test(error.code);
        if (isCooldown && error.retryAfterSeconds) {
          cooldownSeconds = error.retryAfterSeconds;
          say(t('codes.stillWorks'), section);
        } else warn(describeError(error, 'other'), section);
      }
    });
    // After the busy state, which enables the form's buttons again.
    if (cooldownSeconds && attempt === current && !resend.hidden) {
      endCooldown?.();
      endCooldown = countDown(resend, cooldownSeconds, (left) =>
        left === undefined ? t('codes.resend') : t('codes.resendIn', { seconds: left }),
      );
      codeInput.focus();
    }
  }

  passwordForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const username = usernameInput.value.trim();
    const password = passwordInput.value;
    if (!username || !password) {
      warn(t('signIn.enterBoth'), section);
      (username ? passwordInput : usernameInput).focus();
      return;
    }
    void whileBusy(passwordForm, async () => {
      try {
        attempt = { username, methods: [], method: 'totp' };
        follow(await backend.password(username, password), username);
      } catch (error) {
        const failed = error instanceof ApiError ? SIGN_IN_DELIVERY_FAILURES[error.code] : undefined;
        if (failed) {
          // The service does not say which other factors the person has: all are offered, and
          // asking for one they lack is answered with invalid_request, shown like any refusal.
          const methods: FactorType[] = ['sms', 'totp', 'webauthn', 'email'];
          attempt = { username, methods, method: failed, didDeliveryFail: true };
          showFactorForm();
          warn(describeError(error, 'code'), section);
          return;
        }
        attempt = undefined;
        warn(describeError(error, 'password'), passwordInput);
        passwordInput.select();
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
      warn(t('signIn.factor.backupDigits'), codeInput);
      return;
    }
    if (method !== 'webauthn' && method !== 'backup' && !/^\d{6}$/.test(code)) {
      warn(t('codes.sixDigits'), codeInput);
      return;
    }
    const step: SignInStep = method === 'webauthn' ? 'passkey' : method === 'backup' ? 'backup_code' : 'code';
    void whileBusy(factorForm, async () => {
      try {
        let answer: StepAnswer;
        if (method === 'webauthn') {
          // Options are good for one assertion: a second try asks the service for new ones.
          let options = current.webauthnOptions;
          current.webauthnOptions = undefined;
          if (!options) {
            const fresh = await backend.secondFactor({ mfa_type: 'webauthn' });
            if (fresh.kind !== 'second_factor') return follow(fresh, current.username);
            options = fresh.webauthn;
          }
          const assertion = await startAuthentication({
            optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON,
          });
          answer = await backend.secondFactor({ mfa_type: 'webauthn', webauthn_response: assertion, ...remember() });
        } else if (method === 'backup') {
          answer = await backend.secondFactor({ backup_code: code, ...remember() });
        } else {
          answer = await backend.secondFactor({ mfa_type: method, mfa_code: code, ...remember() });
        }
        follow(answer, current.username);
      } catch (error) {
        // The code stays, selected, so that a typo is mended rather than typed again.
        warn(describeError(error, step), codeField.hidden ? section : codeInput);
        if (!codeField.hidden) codeInput.select();
      }
    });
  });

  /** The box, when offered and ticked. */
  function remember(): { remember_device?: true } {
    return !rememberField.hidden && rememberBox.checked ? { remember_device: true } : {};
  }

  resend.addEventListener('click', () => void (attempt && choose(attempt.method)));

  // "Forgot password?" (CONTRACT §20): the link goes by mail; this screen only says what happens next.
  forgotOpen.addEventListener('click', () => {
    clearNotices();
    forgotName.value = usernameInput.value.trim();
    passwordForm.hidden = true;
    // The template's content is not in the document when the language changes: its texts are set now.
    translateWithin(forgotForm);
    passwordForm.after(forgotForm);
    forgotName.focus();
  });

  function closeForgot() {
    clearNotices();
    forgotForm.remove();
    passwordForm.hidden = false;
    forgotOpen.focus();
  }
  forgotBack.addEventListener('click', closeForgot);
  closeOnEscape(forgotForm, closeForgot);

  forgotForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = forgotName.value.trim();
    if (!name) {
      warn(t('signIn.forgot.enterName'), forgotName);
      return;
    }
    void whileBusy(forgotForm, async () => {
      try {
        await askForResetLink(serviceBase, name);
        // The same words whether or not an account matched.
        say(t('reset.linkAsked'), forgotForm);
      } catch (error) {
        warn(describeError(error, 'other'), forgotName);
      }
    });
  });

  factorCancel.addEventListener('click', () => {
    clearNotices();
    hooks.cancelled();
  });

  cancelSignIn.addEventListener('click', () => hooks.cancelled());

  return { start, continueWith, hide, showPasswordStep, focusUsername: () => usernameInput.focus() };
}

export type SignIn = ReturnType<typeof createSignIn>;
