// Adding a second factor (a passkey, an authenticator app, a phone), the same forms on every page:
// the account page (its API under mfa/) and the hosted sign-in when the app asks for a factor the
// person does not have yet (its API under mfa/oauth2/sign-in/<id>/). One form on screen at a time.
import {
  browserSupportsWebAuthn,
  type PublicKeyCredentialCreationOptionsJSON,
  startRegistration,
} from '@simplewebauthn/browser';
import { generate } from 'lean-qr';
import { toSvg } from 'lean-qr/extras/svg';
import { ApiError } from './api-error.js';
import { byId, closeOnEscape, countDown, digitsOf, el, formattedPhone, grouped, setText } from './dom.js';
import { t } from './i18n.js';
import type { EnrolmentStep } from './messages.js';
import { about, announce, clearNotices, say, warn } from './notices.js';
import type { FactorType } from './sign-in.js';

/** As the service checks it (FACTOR_NAME_PATTERN): 1 to 64 characters, none of them a control character. */
export const FACTOR_NAME = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]{1,64}$/u;

export interface FactorAddingHost {
  /** PUT to the enrolment call `path` (e.g. `totp/request/`) under the page's API. */
  enrol<T>(path: string, body: unknown): Promise<T>;
  /** Runs an action of the page; any error becomes a message near `container`. */
  act(step: EnrolmentStep, container: HTMLElement | undefined, action: () => Promise<void>): Promise<void>;
  /** The factor was added; `answer` is what its last call answered. */
  added(message: string, answer: unknown): Promise<void>;
}

/** The "Add …" buttons (#add-passkey, #add-totp, #add-sms) and their forms. */
export function createFactorAdding(host: FactorAddingHost) {
  const addButtons: Record<FactorType, HTMLButtonElement> = {
    webauthn: byId<HTMLButtonElement>('add-passkey'),
    totp: byId<HTMLButtonElement>('add-totp'),
    sms: byId<HTMLButtonElement>('add-sms'),
    email: byId<HTMLButtonElement>('add-email'),
  };
  const forms = {
    passkey: byId<HTMLFormElement>('passkey-form'),
    totpStart: byId<HTMLFormElement>('totp-start-form'),
    totpVerify: byId<HTMLFormElement>('totp-verify-form'),
    smsStart: byId<HTMLFormElement>('sms-start-form'),
    smsVerify: byId<HTMLFormElement>('sms-verify-form'),
    emailVerify: byId<HTMLFormElement>('email-verify-form'),
  };
  const resendButtons = [byId<HTMLButtonElement>('sms-resend'), byId<HTMLButtonElement>('email-resend')];
  const totpLinkLine = byId('totp-link-line');
  let smsNumber = '';
  let totpSecret = '';
  /** The button that opened the add form on screen, to give focus back to. */
  let opener: HTMLButtonElement | undefined;
  /** Ends the countdown of the resend cooldown on a "Send a new code" button. */
  let endCountdown: (() => void) | undefined;

  function closeForms() {
    byId('add-buttons').hidden = false;
    for (const form of Object.values(forms)) {
      form.hidden = true;
      form.reset();
    }
    byId('totp-qr').replaceChildren();
    byId('totp-secret').textContent = '';
    totpLinkLine.replaceChildren();
    totpSecret = '';
    smsNumber = '';
    endCooldown();
  }

  /** Offers only these types (the hosted sign-in offers what reaches what the app asks), each with its line. */
  function offer(types: readonly FactorType[]) {
    for (const [type, addButton] of Object.entries(addButtons)) {
      (addButton.closest('li') ?? addButton).hidden = !types.includes(type as FactorType);
    }
  }

  /** "Send a new code (21 s)", disabled, until the service's cooldown is over: information, not an error. */
  function coolDown(resend: HTMLButtonElement, seconds: number) {
    endCooldown();
    endCountdown = countDown(resend, seconds, (left) =>
      left === undefined ? t('codes.resend') : t('codes.resendIn', { seconds: left }),
    );
  }

  function endCooldown() {
    endCountdown?.();
    endCountdown = undefined;
    for (const resend of resendButtons) {
      resend.disabled = false;
      setText(resend, () => t('codes.resend'));
    }
  }

  function open(form: HTMLFormElement, from: HTMLButtonElement) {
    closeForms();
    clearNotices();
    opener = from;
    // One thing at a time: the other ways to add come back with Cancel or when this one is done.
    byId('add-buttons').hidden = true;
    form.hidden = false;
    form.querySelector('input')?.focus();
  }

  async function finishAdding(message: string, answer: unknown) {
    closeForms();
    opener = undefined;
    await host.added(message, answer);
  }

  for (const form of Object.values(forms)) {
    const cancel = () => {
      closeForms();
      clearNotices();
      opener?.focus();
    };
    form.querySelector('[data-cancel]')?.addEventListener('click', cancel);
    closeOnEscape(form, cancel);
  }

  function nameFrom(input: HTMLInputElement, fallback: string): string | undefined {
    const name = input.value.trim() || fallback;
    if (FACTOR_NAME.test(name)) return name;
    warn(t('factors.nameLength'), input);
    input.focus();
    return undefined;
  }

  addButtons.webauthn.addEventListener('click', () => open(forms.passkey, addButtons.webauthn));
  forms.passkey.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameFrom(byId<HTMLInputElement>('passkey-name'), t('factors.passkey.defaultName'));
    if (!name) return;
    if (!browserSupportsWebAuthn()) {
      warn(t('factors.passkey.notSupported'), forms.passkey);
      return;
    }
    void host.act('passkey', forms.passkey, async () => {
      const { options } = await host.enrol<{ options: PublicKeyCredentialCreationOptionsJSON }>('webauthn/request/', {
        name,
      });
      const credential = await startRegistration({ optionsJSON: options });
      const answer = await host.enrol('webauthn/verify/', { credential, name });
      await finishAdding(t('factors.passkey.added', { name }), answer);
    });
  });

  addButtons.totp.addEventListener('click', () => open(forms.totpStart, addButtons.totp));
  forms.totpStart.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameFrom(byId<HTMLInputElement>('totp-name'), t('factors.totp.defaultName'));
    if (!name) return;
    void host.act('other', forms.totpStart, async () => {
      const enrolment = await host.enrol<{ secret: string; otpauth_uri: string }>('totp/request/', { name });
      forms.totpStart.hidden = true;
      // Drawn as SVG elements (no data: URL, no HTML string): the CSP and Trusted Types allow it.
      byId('totp-qr').replaceChildren(
        toSvg(generate(enrolment.otpauth_uri), document, { on: '#000', off: '#fff', pad: 4 }),
      );
      byId('totp-secret').textContent = grouped(enrolment.secret);
      totpSecret = enrolment.secret;
      // On a phone the QR code cannot be scanned by the phone itself: the link hands the key to its app.
      const link = el('a', { href: enrolment.otpauth_uri, id: 'totp-link' });
      setText(link, () => t('factors.totp.openInApp'));
      totpLinkLine.replaceChildren(link);
      forms.totpVerify.hidden = false;
      byId('totp-verify-title').focus();
    });
  });

  byId('totp-copy').addEventListener('click', () => {
    navigator.clipboard.writeText(totpSecret).then(
      () => say(t('factors.totp.copied'), forms.totpVerify),
      () => warn(t('factors.totp.copyRefused'), forms.totpVerify),
    );
  });

  /** The last step of adding an app or a phone: the 6-digit code it shows or received proves it. */
  function verifyWithCode(form: HTMLFormElement, inputId: string, path: string, added: () => string) {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = byId<HTMLInputElement>(inputId);
      const code = digitsOf(input.value);
      if (!/^\d{6}$/.test(code)) {
        warn(t('codes.sixDigits'), input);
        return;
      }
      void host.act('enrol_code', form, async () => {
        const answer = await about(input, () => host.enrol(path, { mfa_code: code }));
        await finishAdding(added(), answer);
      });
    });
  }

  verifyWithCode(forms.totpVerify, 'totp-code', 'totp/verify/', () => t('factors.totp.added'));

  addButtons.sms.addEventListener('click', () => open(forms.smsStart, addButtons.sms));

  async function sendSmsCode(phone: string) {
    await host.enrol('sms/request/', { phone_number: phone });
    smsNumber = phone;
    setText(byId('sms-verify-intro'), () => t('factors.sms.sent', { phone: formattedPhone(phone) }));
  }

  forms.smsStart.addEventListener('submit', (event) => {
    event.preventDefault();
    const input = byId<HTMLInputElement>('sms-phone');
    const phone = digitsOf(input.value).replace(/^\+/, '');
    if (!/^\d{7,15}$/.test(phone)) {
      warn(t('factors.sms.phoneDigits'), input);
      input.focus();
      return;
    }
    void host.act('phone', forms.smsStart, async () => {
      await about(input, () => sendSmsCode(phone));
      forms.smsStart.hidden = true;
      forms.smsVerify.hidden = false;
      // The intro says where the code went; the code field is described by it, so it is heard once.
      clearNotices();
      byId('sms-code').focus();
    });
  });
  /** "Send a new code" on a form whose code went by SMS or mail: inside the cooldown, the button counts down. */
  function offerResend(
    resend: HTMLButtonElement,
    form: HTMLFormElement,
    codeInputId: string,
    send: () => Promise<void>,
  ) {
    resend.addEventListener('click', async () => {
      let cooldown: number | undefined;
      await host.act('phone', form, async () => {
        try {
          await send();
        } catch (error) {
          const isCooldown = error instanceof ApiError && /_cooldown$/.test(error.code) && error.retryAfterSeconds;
          if (!isCooldown) throw error;
          cooldown = error.retryAfterSeconds;
          say(t('codes.stillWorks'), form);
        }
      });
      // After the busy state, which would enable the button again.
      if (cooldown) coolDown(resend, cooldown);
      byId(codeInputId).focus();
    });
  }

  offerResend(byId<HTMLButtonElement>('sms-resend'), forms.smsVerify, 'sms-code', async () => {
    await sendSmsCode(smsNumber);
    const phone = formattedPhone(smsNumber);
    setText(byId('sms-verify-intro'), () => t('factors.sms.sentAgain', { phone }));
    announce(t('factors.sms.announceAgain', { phone }));
  });
  verifyWithCode(forms.smsVerify, 'sms-code', 'sms/verify/', () =>
    t('factors.sms.added', { phone: formattedPhone(smsNumber) }),
  );

  /** Email codes (CONTRACT §20): nothing to type first; the code goes to the account's verified address. */
  async function sendEmailCode(): Promise<string> {
    const { email } = await host.enrol<{ email: string }>('email-factor/request/', {});
    setText(byId('email-verify-intro'), () => t('factors.email.sent', { address: email }));
    return email;
  }
  addButtons.email.addEventListener('click', () => {
    void host.act('other', byId('add-buttons'), async () => {
      try {
        await sendEmailCode();
      } catch (error) {
        // Asked again moments after a first try: the code mailed then still works.
        if (!(error instanceof ApiError && error.code === 'email_cooldown')) throw error;
        setText(byId('email-verify-intro'), () => t('factors.email.sentBefore'));
      }
      open(forms.emailVerify, addButtons.email);
    });
  });
  offerResend(byId<HTMLButtonElement>('email-resend'), forms.emailVerify, 'email-code', async () => {
    announce(t('factors.email.announceAgain', { address: await sendEmailCode() }));
  });
  verifyWithCode(forms.emailVerify, 'email-code', 'email-factor/verify/', () => t('factors.email.added'));

  /** What "Add codes by email" says: where the codes would go. */
  function describeEmail(address: string) {
    setText(byId('add-email-about'), () => t('factors.email.about', { address }));
  }

  return { closeForms, offer, describeEmail };
}
