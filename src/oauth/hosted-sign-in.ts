import { randomUUID } from 'node:crypto';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { keyedHash, randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import type { Language } from '../i18n/languages.js';
import { pickLanguage, preferredLanguages, requestedLanguage } from '../i18n/messages.js';
import type { NewDevice, RememberedDevices } from '../logins/remembered-devices.js';
import type { SignInSession, SignInSessions } from '../logins/sign-in-sessions.js';
import { type Acr, acrOf, type LoginProof, meetsAcr } from '../logins/step-up.js';
import type { ServiceMetrics } from '../metrics/metrics.js';
import { FACTOR_TYPES, type FactorType, type SecondFactors } from '../mfa/factors/factor.js';
import type { WebauthnFactor } from '../mfa/factors/webauthn.js';
import type { LoginChallenge, SecondStep } from '../mfa/login-challenge.js';
import { provesSecondFactor, type RecoveryRequests } from '../mfa/recovery-requests.js';
import type { OAuthClient } from '../store/clients.js';
import type { Interaction } from '../store/interactions.js';
import type { Store } from '../store/store.js';
import type { StoredUser } from '../store/users.js';
import type { AuthorizationCodes, SignInProof } from './authorization-codes.js';
import {
  type AuthorizationParams,
  type AuthorizationRequest,
  type AuthorizeRefusal,
  checkAuthorizationRequest,
} from './authorize/checks.js';
import type { PasswordCheck } from './password-check.js';

/** A sign-in in progress lasts this long between the authorization request and its last step. */
const INTERACTION_TTL_MS = 30 * 60_000;

/** The browser's cookies this flow reads: its binding to sign-ins in progress, and its sign-in session. */
export interface Browser {
  browserSecret?: string;
  sessionSecret?: string;
  /** A remembered device's token (CONTRACT §19). */
  deviceSecret?: string;
  userAgent?: string;
}

/** A new sign-in session's cookie, for the route to set. */
export interface NewSession {
  secret: string;
  expiresAt: Date;
}

/** Where the browser goes now: back to the app, with a code or an error (RFC 9207: with iss). */
export interface Redirect {
  location: string;
  session?: NewSession;
}

/** What the hosted page shows next, or where it sends the browser. */
export type SignInAnswer =
  | { step: 'password' }
  | {
      step: 'second_factor';
      username: string;
      mfaType: FactorType;
      mfaTypes: FactorType[];
      /** WebAuthn request options, when the factor asked for is a passkey and they were made. */
      webauthn?: unknown;
      /** The app lets the person skip this step in this browser for so many days (CONTRACT §19). */
      rememberDeviceDays?: number;
    }
  | { step: 'enrol'; username: string; factorTypes: FactorType[] }
  | Redirect;

/** What the authorization endpoint does with a request. */
export type AuthorizeOutcome =
  | { page: AuthorizeRefusal & { shownTo: 'browser' } }
  | Redirect
  | { signIn: { interactionId: string; browserSecret?: string; description: SignInDescription } };

/** What the hosted page shows when it opens (see `describe`). */
export interface SignInDescription {
  serviceName: string;
  clientName: string;
  csrfToken: string;
  loginHint?: string;
  uiLocales?: string;
  language: Language;
  answer: SignInAnswer;
}

export interface HostedSignInDeps {
  store: Store;
  factors: SecondFactors;
  /** Passkey sign-ins without a username (CONTRACT §19). */
  passkeys: Pick<WebauthnFactor, 'verifySignIn'>;
  loginChallenge: LoginChallenge;
  passwords: PasswordCheck;
  signInSessions: SignInSessions;
  rememberedDevices: RememberedDevices;
  codes: AuthorizationCodes;
  /** CONTRACT §20: a sign-in with a second factor cancels a waiting recovery request. */
  recovery: Pick<RecoveryRequests, 'cancelRecovery'>;
  audit: AuditTrail;
  metrics: ServiceMetrics;
  clock: Clock;
  issuer: string;
  /** SERVICE_NAME, shown at the top of the page. */
  serviceName: string;
  /** Keys the CSRF tokens of sign-ins in progress. */
  csrfKey: Buffer;
}

type Step = { step: 'password' } | { step: 'done' } | { step: 'second_factor'; acr: Acr } | { step: 'enrol'; acr: Acr };

/**
 * The OpenID Provider's side of the browser flow (CONTRACT §18): the authorization endpoint's
 * decision, and the hosted sign-in's steps between the request and the redirect back: the
 * password, the second factor, or adding one when the client or the request asks for more than
 * the user has. Every step is the password grant's (the same throttles, guess budget, factors).
 */
export function createHostedSignIn(deps: HostedSignInDeps) {
  const {
    store,
    factors,
    passkeys,
    loginChallenge,
    passwords,
    signInSessions,
    rememberedDevices,
    codes,
    audit,
    recovery,
    metrics,
    clock,
    issuer,
  } = deps;

  /**
   * The authorization endpoint: checks the request (a page for what may not go back to the app,
   * a redirect with the error for the rest), then answers from the browser's sign-in session when
   * it proves enough, or starts a sign-in at the hosted page.
   */
  async function authorize(
    params: AuthorizationParams,
    browser: Browser,
    context: RequestContext,
  ): Promise<AuthorizeOutcome> {
    const checked = await checkAuthorizationRequest(params, (id) => store.clients.findClient(id));
    if ('refusal' in checked) {
      const { refusal } = checked;
      if (refusal.shownTo === 'browser') return { page: refusal };
      return { location: errorLocation(refusal, refusal.error.error, refusal.error.description) };
    }
    const { request, client } = checked;
    const session = usableSession(await signInSessions.findLive(browser.sessionSecret), request);
    const user = session && (await store.users.findUserById(session.userId));
    const proof = session && user && proofOf(session);
    if (proof && user && nextStep(proof, user, request, client).step === 'done') {
      await signInSessions.touch(session);
      await cancelRecoveryBy(proof, context);
      const code = await codes.issueCode(request, proof, session.id);
      await signedIn(proof, 'sign_in_session', context);
      return { location: successLocation(request, code) };
    }
    if (request.prompt === 'none') {
      // OpenID Connect Core §3.1.2.6: nothing may be shown, so the app is told what is missing.
      return session
        ? {
            location: errorLocation(
              request,
              'interaction_required',
              'the sign-in session proves less than this request asks',
            ),
          }
        : {
            location: errorLocation(
              request,
              'login_required',
              'no sign-in session; send the request without prompt=none',
            ),
          };
    }
    const browserSecret = browser.browserSecret ?? randomToken(32);
    const id = randomUUID();
    const now = clock.now();
    const interaction: Interaction = {
      id,
      browserHash: sha256(browserSecret),
      csrfHash: sha256(csrfTokenOf(id, browserSecret)),
      clientId: client.id,
      request: JSON.stringify(request),
      loginId: randomUUID(),
      createdAt: now,
      expiresAt: new Date(now.getTime() + INTERACTION_TTL_MS),
      ...(proof && session && { ...proof, signInSessionId: session.id }),
    };
    await store.interactions.insertInteraction(interaction);
    // The page's description goes with the redirect to it, so that the page need not ask for it.
    const description = await describeLoaded(
      { interaction, client, request, user: proof && user, proof },
      { ...browser, browserSecret },
      context,
    );
    return {
      signIn: {
        interactionId: id,
        browserSecret: browser.browserSecret ? undefined : browserSecret,
        description,
      },
    };
  }

  /** The session, unless the request asks for a new sign-in (prompt=login) or a fresher one (max_age). */
  function usableSession(session: SignInSession | undefined, request: AuthorizationRequest): SignInSession | undefined {
    if (!session || request.prompt === 'login') return undefined;
    if (request.maxAgeSeconds === undefined) return session;
    // OpenID Connect Core §3.1.2.1: "max_age=0 is equivalent to prompt=login", even for a session
    // made within the same second (whose age, counted in whole seconds, is 0 too).
    const ageSeconds = Math.floor(clock.now().getTime() / 1000) - session.authTime;
    if (request.maxAgeSeconds === 0 || ageSeconds > request.maxAgeSeconds) return undefined;
    return session;
  }

  /**
   * What the hosted page shows when it opens: the app's name, the CSRF token, the current step, and
   * its language (CONTRACT §22): the request's ui_locales, else the stored language of the user
   * this browser has proved to be (this sign-in's, or its sign-in session's), else the
   * Accept-Language of `context`. Never a login_hint's user's: whether a name has a stored
   * language would tell anyone that the account exists.
   */
  async function describe(
    id: string,
    browser: Browser,
    context: Pick<RequestContext, 'acceptLanguage'>,
  ): Promise<SignInDescription> {
    return describeLoaded(await load(id, browser), browser, context);
  }

  async function describeLoaded(
    signIn: Loaded,
    browser: Browser,
    context: Pick<RequestContext, 'acceptLanguage'>,
  ): Promise<SignInDescription> {
    const step =
      signIn.proof && signIn.user ? nextStep(signIn.proof, signIn.user, signIn.request, signIn.client) : undefined;
    // ui_locales comes first: who the browser is, and their stored language, are read only when it names none shipped.
    const storedLanguage = async () => {
      const knownUserId = signIn.user?.id ?? (await signInSessions.findLive(browser.sessionSecret))?.userId;
      const stored = knownUserId === undefined ? undefined : await store.users.findUserLanguage(knownUserId);
      return pickLanguage(preferredLanguages(context, stored));
    };
    return {
      serviceName: deps.serviceName,
      clientName: signIn.client.name,
      csrfToken: csrfTokenOf(signIn.interaction.id, browser.browserSecret ?? ''),
      loginHint: signIn.request.loginHint,
      uiLocales: signIn.request.uiLocales,
      language: requestedLanguage(signIn.request.uiLocales) ?? (await storedLanguage()),
      // A step that needs a challenge (an SMS, passkey options) is asked for by the page itself.
      answer: await answerFor(signIn, step, undefined),
    };
  }

  /** The password step; throws the password grant's errors (invalid_grant, 429 login_throttled). */
  async function submitPassword(
    id: string,
    browser: Browser,
    csrfToken: string | undefined,
    credentials: { username: string; password: string },
    context: RequestContext,
  ): Promise<SignInAnswer> {
    const signIn = await loadForChange(id, browser, csrfToken);
    if (signIn.proof) throw new ServiceError('invalid_request', 'this sign-in is past its password step');
    const user = await passwords.checkPassword(credentials.username, credentials.password, context);
    // A remembered device (CONTRACT §19) stands for the second factor it was proved with, but
    // reaches aal2 only: a passkey tapped days ago in this browser is not phishing-resistant now.
    const device = await rememberedDevices.recognise(browser.deviceSecret, user.id, signIn.client.rememberDeviceDays);
    const proof: SignInProof = {
      userId: user.id,
      amr: device ? device.amr : ['pwd'],
      acr: device ? 'aal2' : 'aal1',
      authTime: Math.floor(clock.now().getTime() / 1000),
      sessionGeneration: user.sessionGeneration,
    };
    return advance({ ...signIn, user, proof }, browser, context);
  }

  /**
   * CONTRACT §19: signing in with a passkey alone, instead of the password step: the passkey's
   * owner, proved with user verification (amr hwk and user, acr phr). Throws `invalid_grant`,
   * 429 `mfa_throttled`.
   */
  async function submitPasskey(
    id: string,
    browser: Browser,
    csrfToken: string | undefined,
    webauthnResponse: Record<string, unknown>,
    context: RequestContext,
  ): Promise<SignInAnswer> {
    const signIn = await loadForChange(id, browser, csrfToken);
    if (signIn.proof) throw new ServiceError('invalid_request', 'this sign-in is past its first step');
    const { user } = await passkeys.verifySignIn(webauthnResponse, context);
    const proof: SignInProof = {
      userId: user.id,
      amr: ['hwk', 'user'],
      acr: 'phr',
      authTime: Math.floor(clock.now().getTime() / 1000),
      sessionGeneration: user.sessionGeneration,
    };
    return advance({ ...signIn, user, proof }, browser, context);
  }

  /**
   * The second-factor step: with a proof (a code, a backup code, a passkey assertion), judged as the
   * password grant judges it; with `mfaType` alone, that factor's challenge (an SMS, passkey options).
   */
  async function submitSecondFactor(
    id: string,
    browser: Browser,
    csrfToken: string | undefined,
    secondStep: SecondStep & { rememberDevice?: boolean },
    context: RequestContext,
  ): Promise<SignInAnswer & { device?: NewDevice; backupCodesLeft?: number }> {
    const signIn = await loadWithUser(id, browser, csrfToken);
    const step = nextStep(signIn.proof, signIn.user, signIn.request, signIn.client);
    if (step.step !== 'second_factor')
      throw new ServiceError('invalid_request', 'this sign-in does not ask for a second factor now');
    const decision = await loginChallenge.decide(
      signIn.user,
      { ...secondStep, acrValues: [step.acr] },
      { ...context, uiLocales: signIn.request.uiLocales },
    );
    if (!('amr' in decision)) return secondFactorAnswer(signIn, decision.challenge);
    const amr = union(signIn.proof.amr, decision.amr);
    const proof = { ...signIn.proof, amr, acr: acrOf(amr) };
    const answer = await advance({ ...signIn, proof }, browser, context);
    const days = signIn.client.rememberDeviceDays;
    const device =
      secondStep.rememberDevice && days > 0
        ? await rememberedDevices.remember(signIn.user, decision.amr, browser.userAgent, days)
        : undefined;
    if (device) {
      await audit.record('device_remembered', 'succeeded', {
        userId: signIn.user.id,
        context,
        detail: { days: String(days) },
      });
    }
    // Issue 31: a sign-in with a backup code tells the person how many are left.
    const backupCodesLeft =
      decision.factorType === 'backup' ? await store.backupCodes.countUnusedBackupCodes(signIn.user.id) : undefined;
    return {
      ...answer,
      ...(device && { device }),
      ...(backupCodesLeft !== undefined && { backupCodesLeft }),
    };
  }

  /**
   * The login that adds a factor during the sign-in, for the factor's own enrolment calls: the
   * sign-in so far, under the login id its tokens will have (CONTRACT §14 spares it). Throws
   * unless the sign-in is at its enrolment step and `type` is one it offers.
   */
  async function enrolmentLogin(
    id: string,
    browser: Browser,
    csrfToken: string | undefined,
    type: FactorType,
    context: RequestContext,
  ): Promise<{ login: LoginProof; context: RequestContext }> {
    const signIn = await loadWithUser(id, browser, csrfToken);
    const step = nextStep(signIn.proof, signIn.user, signIn.request, signIn.client);
    if (step.step !== 'enrol' || !enrolmentTypes(signIn.user, step.acr).includes(type)) {
      throw new ServiceError('invalid_request', `this sign-in does not offer to add a ${type} factor now`);
    }
    const login = {
      userId: signIn.user.id,
      amr: signIn.proof.amr,
      acr: signIn.proof.acr,
      authTime: signIn.proof.authTime,
      sessionId: signIn.interaction.loginId,
    };
    // The SMS and notices of adding a factor speak the sign-in's language, as its page does.
    return { login, context: { ...context, uiLocales: signIn.request.uiLocales } };
  }

  /**
   * A factor of `type` was added through `enrolmentLogin`, in this same request (whose CSRF token
   * that checked): the sign-in counts it as proved, and goes on.
   */
  async function enrolled(
    id: string,
    browser: Browser,
    type: FactorType,
    context: RequestContext,
  ): Promise<SignInAnswer> {
    const loaded = await load(id, browser);
    if (!loaded.user || !loaded.proof) throw expired();
    const signIn: WithUser = { ...loaded, user: loaded.user, proof: loaded.proof };
    // Adding the factor ended the user's other logins (a new session generation): this one goes on.
    const amr = union(signIn.proof.amr, [factors[type].amr]);
    const proof = { ...signIn.proof, amr, acr: acrOf(amr), sessionGeneration: signIn.user.sessionGeneration };
    return advance({ ...signIn, proof }, browser, context);
  }

  /** The person gave up: back to the app with access_denied (unmet_authentication_requirements at the enrolment step). */
  async function cancel(id: string, browser: Browser, csrfToken: string | undefined): Promise<Redirect> {
    const signIn = await loadForChange(id, browser, csrfToken);
    const step = signIn.proof && signIn.user && nextStep(signIn.proof, signIn.user, signIn.request, signIn.client);
    if (!(await store.interactions.finishInteraction(id, clock.now()))) throw expired();
    return step?.step === 'enrol'
      ? {
          location: errorLocation(
            signIn.request,
            'unmet_authentication_requirements',
            'the person did not add the second factor this app requires',
          ),
        }
      : { location: errorLocation(signIn.request, 'access_denied', 'the person cancelled the sign-in') };
  }

  type Loaded = Awaited<ReturnType<typeof load>>;
  type WithUser = Loaded & { user: StoredUser; proof: SignInProof };

  /**
   * Records what the sign-in has proved, and answers the next step, or the redirect when nothing is
   * missing (the proof and the finish then written in one statement).
   */
  async function advance(signIn: WithUser, browser: Browser, context: RequestContext): Promise<SignInAnswer> {
    const step = nextStep(signIn.proof, signIn.user, signIn.request, signIn.client);
    if (step.step === 'done') return finish(signIn, browser, context);
    await recordProof(signIn.interaction, signIn.proof);
    return answerFor(signIn, step, context);
  }

  /**
   * The answer for a step. With a context, the second factor's challenge is made (an SMS sent,
   * passkey options stored), as the password grant does; without one, only offered.
   */
  async function answerFor(
    signIn: Loaded,
    step: Step | undefined,
    context: RequestContext | undefined,
  ): Promise<SignInAnswer> {
    if (!step || step.step === 'password' || !signIn.user || !signIn.proof) return { step: 'password' };
    const user = signIn.user;
    if (step.step === 'enrol')
      return { step: 'enrol', username: user.username, factorTypes: enrolmentTypes(user, step.acr) };
    if (step.step === 'second_factor') {
      if (context) {
        const decision = await loginChallenge.decide(
          user,
          { acrValues: [step.acr] },
          { ...context, uiLocales: signIn.request.uiLocales },
        );
        if (!('amr' in decision)) return secondFactorAnswer(signIn, decision.challenge);
      }
      const offered = loginChallenge.offer(user, step.acr);
      if (offered) return secondFactorAnswer(signIn, offered);
    }
    throw new Error(`no answer for the step ${step.step}`);
  }

  function secondFactorAnswer(
    signIn: { user?: StoredUser; client: OAuthClient },
    challenge: { mfaType: FactorType; mfaTypes?: FactorType[]; webauthn?: unknown },
  ): SignInAnswer {
    const days = signIn.client.rememberDeviceDays;
    return {
      step: 'second_factor',
      username: signIn.user?.username ?? '',
      mfaType: challenge.mfaType,
      mfaTypes: challenge.mfaTypes ?? [challenge.mfaType],
      ...(challenge.webauthn === undefined ? {} : { webauthn: challenge.webauthn }),
      ...(days > 0 && { rememberDeviceDays: days }),
    };
  }

  /** The sign-in is complete: once, a sign-in session for the browser, a code, and the way back. */
  async function finish(signIn: WithUser, browser: Browser, context: RequestContext): Promise<Redirect> {
    await recordProof(signIn.interaction, signIn.proof, clock.now());
    const current = await signInSessions.findLive(browser.sessionSecret);
    const { proof } = signIn;
    let sessionId: string;
    let session: NewSession | undefined;
    if (
      current &&
      current.userId === proof.userId &&
      current.authTime === proof.authTime &&
      current.acr === proof.acr &&
      sameMethods(current.amr, proof.amr)
    ) {
      // Nothing new was proved (a second app signing in): the session goes on.
      await signInSessions.touch(current);
      sessionId = current.id;
    } else {
      const started = await signInSessions.start(proof, current);
      sessionId = started.session.id;
      session = { secret: started.secret, expiresAt: started.session.expiresAt };
    }
    await cancelRecoveryBy(proof, context);
    const code = await codes.issueCode(signIn.request, proof, sessionId);
    await signedIn(proof, 'hosted_page', context);
    return { location: successLocation(signIn.request, code), session };
  }

  async function signedIn(proof: SignInProof, via: string, context: RequestContext): Promise<void> {
    await audit.record('login', 'succeeded', {
      userId: proof.userId,
      context,
      detail: { flow: 'authorization_code', via, amr: proof.amr.join(' ') },
    });
    metrics.signedIn('authorization_code', proof.amr);
  }

  /** A sign-in with a second factor cancels a waiting recovery (CONTRACT §20): before any code is issued. */
  async function cancelRecoveryBy(proof: SignInProof, context: RequestContext): Promise<void> {
    if (provesSecondFactor(proof.amr)) await recovery.cancelRecovery(proof.userId, 'by_sign_in', context);
  }

  /**
   * The next step of a sign-in that has proved `proof` so far: done when it reaches what the
   * client and the request ask; else the second factor when the user's factors can reach it; else
   * adding one (after a second factor first, when the user has one: CONTRACT §14).
   */
  function nextStep(
    proof: SignInProof | undefined,
    user: StoredUser | undefined,
    request: AuthorizationRequest,
    client: OAuthClient,
  ): Step {
    if (!proof || !user) return { step: 'password' };
    const target = targetAcr(user, request, client);
    const proved = proof.acr;
    if (meetsAcr(proved, target.acr)) return { step: 'done' };
    if (target.isReachable) return { step: 'second_factor', acr: target.acr };
    if (user.factors.length > 0 && !meetsAcr(proved, 'aal2')) return { step: 'second_factor', acr: 'aal2' };
    return { step: 'enrol', acr: target.acr };
  }

  /**
   * What the sign-in must reach: the user's own policy (a second factor once they have one, or
   * when the client requires one), raised to the first of the request's acr_values (RFC 9470, in
   * order of preference) the user's factors reach; the first of them when they reach none.
   */
  function targetAcr(
    user: StoredUser,
    request: AuthorizationRequest,
    client: OAuthClient,
  ): { acr: Acr; isReachable: boolean } {
    const policy: Acr = user.factors.length > 0 || client.mfaPolicy === 'required' ? 'aal2' : 'aal1';
    const raised = (acr: Acr) => (meetsAcr(acr, policy) ? acr : policy);
    const isReachable = (acr: Acr) => acr === 'aal1' || loginChallenge.offer(user, acr) !== undefined;
    const reachable = request.acrValues.find(isReachable);
    const acr = raised(reachable ?? request.acrValues[0] ?? policy);
    return { acr, isReachable: isReachable(acr) };
  }

  /** The factor types the user may add to reach `acr` (a passkey for phr), within each type's limit. */
  function enrolmentTypes(user: StoredUser, acr: Acr): FactorType[] {
    return FACTOR_TYPES.filter(
      (type) =>
        factors[type].canEnrolWhileSigningIn &&
        meetsAcr(acrOf(['pwd', factors[type].amr]), acr) &&
        user.factors.filter((factor) => factor.type === type).length < factors[type].maxPerUser,
    );
  }

  /** The sign-in in progress, if this browser started it; throws 410 `sign_in_expired` otherwise. */
  async function load(id: string, browser: Browser) {
    const interaction = await store.interactions.findLiveInteraction(id, clock.now());
    if (!interaction || !browser.browserSecret || !safeEqual(interaction.browserHash, sha256(browser.browserSecret))) {
      throw expired();
    }
    // A sign-in that went on from the browser's sign-in session ends with it (a logout meanwhile).
    if (interaction.signInSessionId && !(await signInSessions.isLive(interaction.signInSessionId))) throw expired();
    const client = await store.clients.findClient(interaction.clientId);
    if (!client) throw expired();
    const request = JSON.parse(interaction.request) as AuthorizationRequest;
    const user = interaction.userId === undefined ? undefined : await store.users.findUserById(interaction.userId);
    const proof: SignInProof | undefined =
      user &&
      interaction.amr &&
      interaction.acr &&
      interaction.authTime !== undefined &&
      interaction.sessionGeneration !== undefined
        ? {
            userId: user.id,
            amr: interaction.amr,
            acr: interaction.acr,
            authTime: interaction.authTime,
            sessionGeneration: interaction.sessionGeneration,
          }
        : undefined;
    return { interaction, client, request, user, proof };
  }

  /** `load` for a change: the page must send the CSRF token it was given (403 `csrf_check_failed`). */
  async function loadForChange(id: string, browser: Browser, csrfToken: string | undefined) {
    const signIn = await load(id, browser);
    if (!safeEqual(signIn.interaction.csrfHash, sha256(csrfToken ?? ''))) {
      throw new ServiceError(
        'csrf_check_failed',
        'send the X-CSRF-Token header the sign-in page was given; reload the page',
      );
    }
    return signIn;
  }

  /** `loadForChange` past the password step. */
  async function loadWithUser(id: string, browser: Browser, csrfToken: string | undefined): Promise<WithUser> {
    const signIn = await loadForChange(id, browser, csrfToken);
    if (!signIn.user || !signIn.proof)
      throw new ServiceError('invalid_request', 'this sign-in asks for the password first');
    return { ...signIn, user: signIn.user, proof: signIn.proof };
  }

  /** Records the proof (and the finish, at `finishedAt`); throws `sign_in_expired` when another request finished it first. */
  async function recordProof(interaction: Interaction, proof: SignInProof, finishedAt?: Date): Promise<void> {
    if (!(await store.interactions.recordInteractionProof(interaction.id, proof, finishedAt))) throw expired();
  }

  function csrfTokenOf(id: string, browserSecret: string): string {
    return keyedHash(deps.csrfKey, 'sign-in-csrf', id, browserSecret);
  }

  /** RFC 6749 §4.1.2 with RFC 9207's iss. */
  function successLocation(request: AuthorizationRequest, code: string): string {
    return locationOf(request.redirectUri, { code, state: request.state, iss: issuer });
  }

  /** RFC 6749 §4.1.2.1 with RFC 9207's iss. */
  function errorLocation(to: { redirectUri: string; state?: string }, error: string, description: string): string {
    return locationOf(to.redirectUri, { error, error_description: description, state: to.state, iss: issuer });
  }

  return { authorize, describe, submitPassword, submitPasskey, submitSecondFactor, enrolmentLogin, enrolled, cancel };
}

export type HostedSignIn = ReturnType<typeof createHostedSignIn>;

function proofOf(session: SignInSession): SignInProof {
  return {
    userId: session.userId,
    amr: session.amr,
    acr: session.acr,
    authTime: session.authTime,
    sessionGeneration: session.sessionGeneration,
  };
}

function union(methods: readonly string[], more: readonly string[]): string[] {
  return [...new Set([...methods, ...more])];
}

function sameMethods(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((method) => b.includes(method));
}

function expired(): ServiceError {
  return new ServiceError(
    'sign_in_expired',
    'this sign-in has expired or was finished; go back to the app and sign in again',
  );
}

/** `uri` with the parameters added to its query (those undefined left out). */
function locationOf(uri: string, parameters: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}
