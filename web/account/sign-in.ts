// The account page's sign-in: the shared steps (web/shared/sign-in.ts) sent to the token endpoint's
// password grant, and the same screen re-authenticating when a change needs a fresh login (RFC 9470).
import { setTitle } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { createSignIn, type Method, type StepAnswer } from '../shared/sign-in.js';
import { type Api, isTokens, type MfaRequired, PASSKEY_GRANT, type StepUpChallenge, type Tokens } from './api.js';

export interface AccountSignInHooks {
  /** A first login finished: show the account (`method`: its second step's, if it had one). */
  signedIn(username: string, method?: Method): void;
  /** Shows the account again after a re-authentication, finished or cancelled. */
  backToAccount(): void;
}

/** The first sign-in's screen, in the page's language of the moment. */
function firstSignIn() {
  return {
    title: t('account.signIn.title'),
    intro: t('account.signIn.intro'),
    documentTitle: t('account.documentTitle.signIn'),
    cancellable: false,
    offersPasskey: true,
  };
}

export function createAccountSignIn(api: Api, hooks: AccountSignInHooks) {
  /** The login in progress: the password is kept (in memory) only until the second step ends. */
  let credentials: { username: string; password: string } | undefined;
  /** RFC 9470 `acr_values` and `max_age` the re-authentication asks for. */
  let stepUpExtra: Record<string, string> = {};
  let issued: Tokens | undefined;
  /** Set while re-authenticating: settles the sensitive call that is waiting. */
  let stepUpSettle: ((done: boolean) => void) | undefined;
  /** What had focus when the re-authentication began, to go back to. */
  let focusBefore: HTMLElement | undefined;

  function toStep(answer: Tokens | MfaRequired): StepAnswer {
    if (isTokens(answer)) {
      issued = answer;
      return { kind: 'done' };
    }
    return {
      kind: 'second_factor',
      mfaType: answer.mfa_type,
      mfaTypes: answer.mfa_types ?? [answer.mfa_type],
      webauthn: answer.webauthn,
    };
  }

  const steps = createSignIn(
    {
      async password(username, password) {
        credentials = { username, password };
        // openid, so that userinfo gives the account's own spelling of the name (not what was typed).
        return toStep(
          await api.tokenRequest({ grant_type: 'password', username, password, scope: 'openid', ...stepUpExtra }),
        );
      },
      async secondFactor(fields) {
        if (!credentials) throw new Error('no login in progress');
        return toStep(
          await api.tokenRequest({
            grant_type: 'password',
            ...credentials,
            scope: 'openid',
            ...stepUpExtra,
            ...fields,
          }),
        );
      },
      passkeyOptions: () => api.passkeyOptions(),
      async passkey(assertion) {
        // openid, so that userinfo says whose passkey it was (no username was typed).
        const answer = await api.tokenRequest({
          grant_type: PASSKEY_GRANT,
          webauthn_response: assertion,
          scope: 'openid',
        });
        const step = toStep(answer);
        return { answer: step, username: isTokens(answer) ? await api.usernameOf(answer.access_token) : '' };
      },
    },
    {
      finished(username, method) {
        const wasTyped = credentials !== undefined;
        credentials = undefined;
        const tokens = issued;
        issued = undefined;
        if (!tokens) return;
        const previous = api.useTokens(tokens);
        if (stepUpSettle) {
          // The page holds one login at a time: the one replaced is ended, not left to linger.
          if (previous) api.revoke(previous).catch(() => undefined);
          leaveStepUp(true);
          return;
        }
        if (!wasTyped) return hooks.signedIn(username, method);
        // The name as the account spells it ("alice", though "Alice" was typed); the typed one if
        // userinfo cannot say.
        void api
          .usernameOf(tokens.access_token)
          .catch(() => username)
          .then((name) => hooks.signedIn(name, method));
      },
      cancelled() {
        credentials = undefined;
        if (stepUpSettle) return leaveStepUp(false);
        steps.showPasswordStep();
        steps.focusUsername();
      },
    },
  );

  /** The sign-in screen, empty. */
  function start(): void {
    settleStepUp(false);
    setTitle(() => t('account.documentTitle.signIn'));
    steps.start(firstSignIn());
  }

  /** Re-authenticates `username` (RFC 9470): true once new tokens are in use, false if cancelled. */
  function stepUp(username: string, challenge: StepUpChallenge, phoneEnding?: string): Promise<boolean> {
    settleStepUp(false);
    focusBefore = document.activeElement instanceof HTMLElement ? document.activeElement : undefined;
    setTitle(() => t('account.documentTitle.confirm'));
    steps.start({
      title: t('account.confirm.title'),
      intro: challenge.acrValues ? t('account.confirm.introTwoSteps') : t('account.confirm.introPassword'),
      documentTitle: t('account.documentTitle.confirm'),
      username,
      cancellable: true,
      // Re-authenticating proves it is the same person: a passkey sign-in could be anyone's.
      offersPasskey: false,
      phoneEnding,
    });
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
    steps.hide();
    hooks.backToAccount();
    if (focusBefore?.isConnected && !focusBefore.closest('[hidden]')) focusBefore.focus();
    focusBefore = undefined;
    settleStepUp(done);
  }

  return { start, stepUp };
}
