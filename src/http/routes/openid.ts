import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestContext } from '../../audit/audit-trail.js';
import { keyedHash } from '../../crypto/secrets.js';
import { ServiceError } from '../../errors.js';
import { isLanguage } from '../../i18n/messages.js';
import type { NewDevice } from '../../logins/remembered-devices.js';
import type { SignInSessions } from '../../logins/sign-in-sessions.js';
import type { LoginProof } from '../../logins/step-up.js';
import type { BackupCodes } from '../../mfa/backup-codes.js';
import type { FactorType } from '../../mfa/factors/factor.js';
import type { SmsFactor } from '../../mfa/factors/sms.js';
import type { TotpFactor } from '../../mfa/factors/totp.js';
import type { WebauthnFactor } from '../../mfa/factors/webauthn.js';
import type { AccessTokens } from '../../oauth/access-tokens.js';
import type { AuthorizationParams } from '../../oauth/authorize/checks.js';
import type { Clients } from '../../oauth/clients.js';
import type { HostedSignIn, Redirect, SignInAnswer, SignInDescription } from '../../oauth/hosted-sign-in.js';
import type { IdTokens } from '../../oauth/id-tokens.js';
import type { Store } from '../../store/store.js';
import type { App, RequestGuard } from '../app-types.js';
import type { Cookies } from '../cookies.js';
import { sendMessagePage } from '../message-page.js';
import { contextOf } from '../request-context.js';
import {
  ErrorBody,
  MfaStatus,
  SignInAnswer as SignInAnswerBody,
  SignInDescription as SignInDescriptionBody,
  SignInIdParams,
  SignInPasskeyBody,
  SignInPasswordBody,
  SignInSecondFactorBody,
  SmsRequestBody,
  SmsVerifyBody,
  TotpEnrolment,
  TotpRequestBody,
  toMfaStatusBody,
  UserInfo,
  WebauthnRegistrationOptions,
  WebauthnRequestBody,
  WebauthnVerifyBody,
} from '../schemas.js';
import { type Page, pageNotBuilt, sendPageFile } from './pages.js';

export const AUTHORIZATION_PATH = '/mfa/oauth2/authorize/';
export const USERINFO_PATH = '/mfa/oauth2/userinfo/';
export const END_SESSION_PATH = '/mfa/oauth2/logout/';
/** The API the hosted sign-in page (web/sign-in/, served at /sign-in/) calls. */
const SIGN_IN_API = '/mfa/oauth2/sign-in/:id';

export interface OpenIdRouteDeps {
  issuer: string;
  signIn: HostedSignIn;
  signInSessions: SignInSessions;
  idTokens: IdTokens;
  clients: Clients;
  accessTokens: AccessTokens;
  store: Store;
  cookies: Cookies;
  factors: { sms: SmsFactor; totp: TotpFactor; webauthn: WebauthnFactor };
  backupCodes: BackupCodes;
  requireAccessToken: RequestGuard;
  /** Keys the logout confirmation's token. */
  csrfKey: Buffer;
  /** The hosted sign-in's built page (web/sign-in/), which the authorization endpoint answers with; undefined when not built. */
  signInPage: Page | undefined;
  /** The shared style sheet's URL, for the pages written here; undefined when the pages are not built. */
  stylesheet?: string;
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody, 410: ErrorBody, 429: ErrorBody };

/**
 * OpenID Connect's browser-facing endpoints (CONTRACT §18): the authorization endpoint, the hosted
 * sign-in's API, userinfo and RP-initiated logout. Registered in the OAuth scope, which reads forms.
 */
export function openIdRoutes(app: App, deps: OpenIdRouteDeps) {
  const { issuer, signIn, cookies, factors } = deps;
  const issuerOrigin = new URL(issuer).origin;

  async function authorize(request: FastifyRequest, reply: FastifyReply, params: AuthorizationParams) {
    const outcome = await signIn.authorize(params, cookies.read(request), contextOf(request));
    if ('page' in outcome) {
      return sendMessagePage(reply, {
        status: 400,
        title: 'This sign-in link is not valid',
        paragraphs: [
          `${outcome.page.error.description}.`,
          'The app that sent you here is not set up for this address: go back to it and try again, or tell its owners.',
        ],
        stylesheet: deps.stylesheet,
      });
    }
    if ('signIn' in outcome) {
      if (outcome.signIn.browserSecret) cookies.setBrowser(reply, outcome.signIn.browserSecret);
      cookies.setSignInDescription(
        reply,
        outcome.signIn.interactionId,
        descriptionBody(reply, outcome.signIn.description),
      );
      // The page itself, not a redirect to it (one request and one round trip fewer, issue 33): its
      // script finds its sign-in in the description and takes the page's own address,
      // /sign-in/?id=…, where a reload asks the API. Never stored: it comes with the cookies.
      const page = deps.signInPage?.elsewhere;
      if (!page) throw pageNotBuilt('sign-in');
      return sendPageFile(request, reply.headers({ ...page.headers, 'cache-control': 'no-store' }), page.html);
    }
    return redirectBack(reply, outcome);
  }

  function redirectBack(reply: FastifyReply, outcome: Redirect) {
    if (outcome.session) cookies.setSession(reply, outcome.session.secret, outcome.session.expiresAt);
    return reply.redirect(outcome.location, 303);
  }

  // RFC 6749 §3.1: the authorization endpoint takes GET, and OpenID Connect Core §3.1.2.1 POST (a form).
  app.get(AUTHORIZATION_PATH, { schema: { hide: true } }, (request, reply) =>
    authorize(request, reply, request.query as AuthorizationParams),
  );
  app.post(AUTHORIZATION_PATH, { schema: { hide: true } }, (request, reply) =>
    authorize(request, reply, (request.body ?? {}) as AuthorizationParams),
  );

  /**
   * Every change the sign-in page makes comes from the page itself: JSON (which a form on another
   * site cannot send), its CSRF token, and, when the browser names it, our own origin.
   */
  function sameOrigin(request: FastifyRequest) {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== issuerOrigin) {
      throw new ServiceError('csrf_check_failed', 'the sign-in is answered from its own page only');
    }
    const token = request.headers['x-csrf-token'];
    return { browser: cookies.read(request), csrfToken: typeof token === 'string' ? token : undefined };
  }

  /** The answer's wire form; a redirect also sets the new sign-in session's cookie. */
  function answer(reply: FastifyReply, result: SignInAnswer & { device?: NewDevice; backupCodesLeft?: number }) {
    if (result.device) cookies.setDevice(reply, result.device.secret, result.device.expiresAt);
    if ('location' in result) {
      if (result.session) cookies.setSession(reply, result.session.secret, result.session.expiresAt);
      const left = result.backupCodesLeft;
      return { location: result.location, ...(left !== undefined && { backup_codes_left: left }) };
    }
    if (result.step === 'password') return { step: result.step };
    if (result.step === 'enrol')
      return { step: result.step, username: result.username, factor_types: result.factorTypes };
    return {
      step: result.step,
      username: result.username,
      mfa_type: result.mfaType,
      mfa_types: result.mfaTypes,
      ...(result.webauthn === undefined ? {} : { webauthn: result.webauthn as Record<string, unknown> }),
      ...(result.rememberDeviceDays === undefined ? {} : { remember_device_days: result.rememberDeviceDays }),
    };
  }

  /** A sign-in's description, as GET …/sign-in/{id}/ answers it and the authorization endpoint hands it over. */
  function descriptionBody(reply: FastifyReply, described: SignInDescription) {
    return {
      ...answer(reply, described.answer),
      service_name: described.serviceName,
      client_name: described.clientName,
      csrf_token: described.csrfToken,
      ...(described.loginHint === undefined ? {} : { login_hint: described.loginHint }),
      ...(described.uiLocales === undefined ? {} : { ui_locales: described.uiLocales }),
      language: described.language,
    };
  }

  /**
   * The sign-in goes on once a factor was added; the first factor also brings the first backup
   * codes, which the page shows before going back to the app (issue 29).
   */
  async function afterEnrolment(
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    login: LoginProof,
    type: FactorType,
    context: RequestContext,
  ) {
    const backupCodes = await deps.backupCodes.createFirstSet(login, context);
    const result = answer(reply, await signIn.enrolled(id, cookies.read(request), type, context));
    return backupCodes ? { ...result, backup_codes: backupCodes } : result;
  }

  app.get(
    `${SIGN_IN_API}/`,
    { schema: { params: SignInIdParams, response: { 200: SignInDescriptionBody, ...errors } } },
    async (request, reply) =>
      descriptionBody(reply, await signIn.describe(request.params.id, cookies.read(request), contextOf(request))),
  );

  app.post(
    `${SIGN_IN_API}/password`,
    { schema: { params: SignInIdParams, body: SignInPasswordBody, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { browser, csrfToken } = sameOrigin(request);
      return answer(
        reply,
        await signIn.submitPassword(request.params.id, browser, csrfToken, request.body, contextOf(request)),
      );
    },
  );

  app.post(
    `${SIGN_IN_API}/second-factor`,
    {
      schema: { params: SignInIdParams, body: SignInSecondFactorBody, response: { 200: SignInAnswerBody, ...errors } },
    },
    async (request, reply) => {
      const { browser, csrfToken } = sameOrigin(request);
      const body = request.body;
      const step = {
        mfaType: body.mfa_type,
        mfaCode: body.mfa_code,
        backupCode: body.backup_code,
        webauthnResponse: body.webauthn_response,
        rememberDevice: body.remember_device,
      };
      return answer(
        reply,
        await signIn.submitSecondFactor(request.params.id, browser, csrfToken, step, contextOf(request)),
      );
    },
  );

  app.post(
    `${SIGN_IN_API}/passkey`,
    { schema: { params: SignInIdParams, body: SignInPasskeyBody, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { browser, csrfToken } = sameOrigin(request);
      return answer(
        reply,
        await signIn.submitPasskey(
          request.params.id,
          browser,
          csrfToken,
          request.body.webauthn_response,
          contextOf(request),
        ),
      );
    },
  );

  app.post(
    `${SIGN_IN_API}/cancel`,
    { schema: { params: SignInIdParams, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { browser, csrfToken } = sameOrigin(request);
      return answer(reply, await signIn.cancel(request.params.id, browser, csrfToken));
    },
  );

  /** The sign-in's login that adds a factor of `type`, and the context its SMS and notices speak in. */
  function enrolling(request: FastifyRequest, id: string, type: FactorType) {
    const { browser, csrfToken } = sameOrigin(request);
    return signIn.enrolmentLogin(id, browser, csrfToken, type, contextOf(request));
  }

  // Adding a factor during the sign-in (mfa_policy required, or a passkey for acr_values=phr):
  // the factors' own enrolment, under the sign-in's login.
  app.put(
    `${SIGN_IN_API}/totp/request/`,
    { schema: { params: SignInIdParams, body: TotpRequestBody, response: { 200: TotpEnrolment, ...errors } } },
    async (request) => {
      const { login } = await enrolling(request, request.params.id, 'totp');
      const start = await factors.totp.requestEnrolment(login, request.body.name);
      return { factor_id: start.factorId, secret: start.secret, otpauth_uri: start.otpauthUri };
    },
  );
  app.put(
    `${SIGN_IN_API}/totp/verify/`,
    { schema: { params: SignInIdParams, body: SmsVerifyBody, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { login, context } = await enrolling(request, request.params.id, 'totp');
      await factors.totp.confirmEnrolment(login, request.body.mfa_code, context);
      return afterEnrolment(request, reply, request.params.id, login, 'totp', context);
    },
  );
  app.put(
    `${SIGN_IN_API}/webauthn/request/`,
    {
      schema: {
        params: SignInIdParams,
        body: WebauthnRequestBody,
        response: { 200: WebauthnRegistrationOptions, ...errors },
      },
    },
    async (request) => {
      const { login } = await enrolling(request, request.params.id, 'webauthn');
      return { options: await factors.webauthn.requestEnrolment(login, request.body.name) };
    },
  );
  app.put(
    `${SIGN_IN_API}/webauthn/verify/`,
    { schema: { params: SignInIdParams, body: WebauthnVerifyBody, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { login, context } = await enrolling(request, request.params.id, 'webauthn');
      await factors.webauthn.confirmEnrolment(login, request.body.credential, request.body.name, context);
      return afterEnrolment(request, reply, request.params.id, login, 'webauthn', context);
    },
  );
  app.put(
    `${SIGN_IN_API}/sms/request/`,
    { schema: { params: SignInIdParams, body: SmsRequestBody, response: { 200: MfaStatus, ...errors } } },
    async (request) => {
      const { login, context } = await enrolling(request, request.params.id, 'sms');
      return toMfaStatusBody(await factors.sms.requestEnrolment(login, request.body.phone_number, context));
    },
  );
  app.put(
    `${SIGN_IN_API}/sms/verify/`,
    { schema: { params: SignInIdParams, body: SmsVerifyBody, response: { 200: SignInAnswerBody, ...errors } } },
    async (request, reply) => {
      const { login, context } = await enrolling(request, request.params.id, 'sms');
      await factors.sms.confirmEnrolment(login, request.body.mfa_code, context);
      return afterEnrolment(request, reply, request.params.id, login, 'sms', context);
    },
  );

  // OpenID Connect Core §5.3: the claims of the access token's user, for a token granted openid.
  const userinfo = async (request: FastifyRequest, reply: FastifyReply) => {
    const { principal } = request;
    if (!principal.scope.split(' ').includes('openid')) {
      // RFC 6750 §3.1 (OpenID Connect Core §5.3.3): the refusal is also a Bearer challenge naming
      // the scope, which is how clients such as openid-client read it.
      reply.header('www-authenticate', 'Bearer realm="mfa", error="insufficient_scope", scope="openid"');
      throw new ServiceError(
        'insufficient_scope',
        'the userinfo endpoint needs an access token granted the openid scope',
      );
    }
    const user = await deps.store.users.findUserById(principal.userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    // OpenID Connect Core §5.1: `locale`, a profile claim, is the user's stored language (a BCP 47
    // tag), left out while they follow the browser.
    const stored = principal.scope.split(' ').includes('profile')
      ? await deps.store.users.findUserLanguage(user.id)
      : undefined;
    return { sub: user.id, preferred_username: user.username, ...(isLanguage(stored) && { locale: stored }) };
  };
  const userinfoSchema = {
    schema: { response: { 200: UserInfo, 401: ErrorBody, 403: ErrorBody } },
    onRequest: deps.requireAccessToken,
  };
  app.get(USERINFO_PATH, userinfoSchema, userinfo);
  app.post(USERINFO_PATH, userinfoSchema, userinfo);

  registerLogout(app, deps, issuerOrigin);
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): ends the browser's sign-in session
 * and the logins it gave, then returns to a registered post_logout_redirect_uri or says it is done.
 * Without an ID token naming this session, the person is asked first (a form posted back here, with
 * a token derived from the session so that another site cannot post it); the account page's JSON
 * call, from our own origin, ends it at once.
 */
function registerLogout(app: App, deps: OpenIdRouteDeps, issuerOrigin: string) {
  const { cookies, signInSessions, idTokens, clients, stylesheet } = deps;
  const badRequest = (reply: FastifyReply, why: string) =>
    sendMessagePage(reply, {
      status: 400,
      title: 'This sign-out link is not valid',
      paragraphs: [why, 'You are still signed in. Go back to the app and sign out again.'],
      stylesheet,
    });

  async function logout(request: FastifyRequest, reply: FastifyReply, params: Record<string, unknown>) {
    const text = (name: string) => (typeof params[name] === 'string' ? (params[name] as string) : undefined);
    const session = await signInSessions.findLive(cookies.read(request).sessionSecret);
    if (request.method === 'POST' && request.headers['content-type']?.startsWith('application/json')) {
      if (request.headers.origin !== issuerOrigin) {
        throw new ServiceError('csrf_check_failed', 'sign out from this service’s own pages, or with a form');
      }
      if (session) await signInSessions.end(session);
      cookies.clearSession(reply);
      return reply.code(204).send();
    }
    const hintToken = text('id_token_hint');
    const hint = hintToken === undefined ? undefined : await idTokens.readIdTokenHint(hintToken);
    if (hintToken !== undefined && !hint)
      return badRequest(reply, 'id_token_hint is not an ID token this service issued.');
    const clientId = text('client_id') ?? hint?.clientId;
    if (hint && text('client_id') !== undefined && text('client_id') !== hint.clientId) {
      return badRequest(reply, 'client_id is not the client the id_token_hint was issued to.');
    }
    const redirectUri = text('post_logout_redirect_uri');
    if (redirectUri !== undefined) {
      const client = clientId === undefined ? undefined : await clients.findClient(clientId);
      if (!client)
        return badRequest(reply, 'post_logout_redirect_uri needs client_id or id_token_hint naming a client.');
      if (!client.postLogoutRedirectUris.includes(redirectUri)) {
        return badRequest(reply, 'post_logout_redirect_uri is not one registered for this client.');
      }
    }
    const state = text('state');
    if (session) {
      const isNamed =
        hint !== undefined && hint.userId === session.userId && (hint.signInSessionId ?? session.id) === session.id;
      const confirmation = logoutConfirmation(session.id);
      const isConfirmed = request.method === 'POST' && text('confirmation') === confirmation;
      if (!isNamed && !isConfirmed) {
        return sendMessagePage(reply, {
          status: 200,
          title: 'Sign out?',
          paragraphs: [
            'You are signed in here, and an app asks to sign you out of every app you signed in to with this account.',
          ],
          form: {
            action: deps.issuer + END_SESSION_PATH,
            fields: {
              confirmation,
              ...(clientId === undefined ? {} : { client_id: clientId }),
              ...(redirectUri === undefined ? {} : { post_logout_redirect_uri: redirectUri }),
              ...(state === undefined ? {} : { state }),
            },
            button: 'Sign out',
          },
          stylesheet,
        });
      }
      await signInSessions.end(session);
    }
    cookies.clearSession(reply);
    if (redirectUri !== undefined) {
      const back = new URL(redirectUri);
      if (state !== undefined) back.searchParams.set('state', state);
      return reply.redirect(back.toString(), 303);
    }
    return sendMessagePage(reply, {
      status: 200,
      title: 'You are signed out',
      paragraphs: [
        'You are signed out of this service and of the apps you signed in to through it. You may close this page.',
      ],
      stylesheet,
    });
  }

  /** The confirmation form's token: only a page that saw this session's form can post it. */
  function logoutConfirmation(sessionId: string): string {
    return keyedHash(deps.csrfKey, 'logout-confirmation', sessionId);
  }

  app.get(END_SESSION_PATH, { schema: { hide: true } }, (request, reply) =>
    logout(request, reply, request.query as Record<string, unknown>),
  );
  app.post(END_SESSION_PATH, { schema: { hide: true } }, (request, reply) =>
    logout(request, reply, (request.body ?? {}) as Record<string, unknown>),
  );
}
