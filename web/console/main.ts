// The operators' console (CONTRACT §21), served at <issuer>/admin/console/. The operator signs in
// through the hosted sign-in (auth.ts); every view reads and changes through the admin API with
// the operator's access token, which must come from a sign-in with a second factor, and from one
// within STEP_UP_MAX_AGE for a change: then the console signs in again and comes back to the change.
// It is in the browser's language (CONTRACT §22: the first of the five shipped, else English).
import { byId } from '../shared/dom.js';
import { addEnglish, t, useLanguage } from '../shared/i18n.js';
import { describeError } from '../shared/messages.js';
import { clearNotices } from '../shared/notices.js';
import { type ConsoleApi, createConsoleApi, refusalOf } from './api.js';
import { consoleClientId, land, type Resume, signIn, signOut } from './auth.js';
import { createClientsView } from './clients.js';
import en from './locales/en.json' with { type: 'json' };
import { createSignInsView } from './sign-ins.js';
import { createSigningKeysView } from './signing-keys.js';
import { createSmsView } from './sms.js';
import { createUsersView, type UserAction } from './users.js';
import { createWebhooksView } from './webhooks.js';

addEnglish(en);

const VIEWS = ['users', 'sms', 'sign-ins', 'clients', 'webhooks', 'signing-keys'] as const;
type View = (typeof VIEWS)[number];

const gate = byId('gate');
const gateSignIn = byId<HTMLButtonElement>('gate-sign-in');
let gateResume: { resume: Resume; how: { strong?: boolean } } = { resume: { view: '' }, how: {} };
/** What the operator's sign-in reached (the ID token's acr). */
let signedInAcr: unknown;

/** Shows only the gate: a sentence on why there is nothing else, and what to do. */
function showGate(
  title: string,
  text: string,
  options: { signInAgain?: { strong?: boolean }; account?: boolean } = {},
) {
  for (const view of VIEWS) byId(`${view}-view`).hidden = true;
  byId('nav').hidden = true;
  byId('gate-title').textContent = title;
  byId('gate-text').textContent = text;
  gateSignIn.hidden = options.signInAgain === undefined;
  gateResume = { resume: { view: location.hash }, how: options.signInAgain ?? {} };
  byId('gate-account').hidden = !options.account;
  gate.hidden = false;
  document.title = `${title} · ${t('console.title')}`;
  byId('gate-title').focus();
}

gateSignIn.addEventListener('click', () => void signIn(gateResume.resume, gateResume.how));
byId('sign-out').addEventListener('click', () => void signOut());

// Functions, not constants: the texts are looked up once the page's language is known.
const notOperator = () => [t('console.gate.notOperator.title'), t('console.gate.notOperator.text')] as const;
const needsSecondFactor = () =>
  [t('console.gate.needsSecondFactor.title'), t('console.gate.needsSecondFactor.text')] as const;

/**
 * What a refusal of the admin API asks: sign in again (an expired token; a change that needs a
 * fresh sign-in, after which `resume` comes back to it), or the gate. False for any other error.
 */
function refused(error: unknown, resume?: Resume): boolean {
  switch (refusalOf(error, signedInAcr)) {
    case 'signed-out':
      void signIn({ view: location.hash });
      return true;
    case 'fresh':
      void signIn(resume ?? { view: location.hash }, { fresh: true });
      return true;
    case 'not-operator':
      showGate(...notOperator());
      return true;
    case 'second-factor':
      showGate(...needsSecondFactor(), { signInAgain: { strong: true }, account: true });
      return true;
    default:
      return false;
  }
}

const describe = (error: unknown) => describeError(error);

function open(api: ConsoleApi, username: string, resume: Resume | undefined) {
  byId('who-name').textContent = username;
  byId('who').hidden = false;
  byId('sign-out').hidden = false;
  const users = createUsersView(api, {
    refused: (error, change) => refused(error, change && { view: '#users', ...change }),
    describe,
  });
  const hooks = { refused: (error: unknown) => refused(error), describe };
  const shows: Record<View, () => Promise<void>> = {
    users: users.start,
    sms: createSmsView(api, hooks).show,
    'sign-ins': createSignInsView(api).show,
    clients: createClientsView(api, { ...hooks, consoleClientId }).show,
    webhooks: createWebhooksView(api, hooks).show,
    'signing-keys': createSigningKeysView(api, hooks).show,
  };

  /** The view the address names (#users by default), its data read afresh. */
  async function route(focus: boolean): Promise<void> {
    const name = (VIEWS as readonly string[]).includes(location.hash.slice(1))
      ? (location.hash.slice(1) as View)
      : 'users';
    clearNotices();
    for (const view of VIEWS) byId(`${view}-view`).hidden = view !== name;
    for (const link of document.querySelectorAll<HTMLAnchorElement>('#nav a')) {
      if (link.hash === `#${name}`) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    document.title = `${byId(`${name}-title`).textContent} · ${t('console.title')}`;
    if (focus) byId(`${name}-title`).focus();
    try {
      await shows[name]();
    } catch (error) {
      if (!refused(error)) showGate(t('console.gate.couldNotLoad'), describe(error), { signInAgain: {} });
    }
  }

  // The address after a sign-in is the redirect URI's: the view comes back from the state.
  if (resume?.view) history.replaceState(null, '', location.pathname + resume.view);
  window.addEventListener('hashchange', () => void route(true));
  gate.hidden = true;
  byId('nav').hidden = false;
  void route(false).then(() => {
    if (resume?.userId && resume.action && gate.hidden) {
      void users.resume(resume.userId, resume.action as UserAction);
    }
  });
}

async function start(): Promise<void> {
  await useLanguage();
  const landing = await land();
  switch (landing.kind) {
    case 'redirecting':
      return;
    case 'signed-out':
      showGate(t('console.gate.signedOut.title'), t('console.gate.signedOut.text'), { signInAgain: {} });
      return;
    case 'refused':
      if (landing.error === 'unmet_authentication_requirements') {
        showGate(...needsSecondFactor(), { signInAgain: { strong: true }, account: true });
      } else {
        showGate(t('console.gate.signInUnfinished'), landing.description || landing.error, { signInAgain: {} });
      }
      return;
    case 'signed-in': {
      const username = String(landing.user.profile.preferred_username ?? landing.user.profile.sub);
      signedInAcr = landing.user.profile.acr;
      open(createConsoleApi(landing.user.access_token), username, landing.resume);
    }
  }
}

start().catch((error) => showGate(t('console.gate.couldNotStart'), describe(error), { signInAgain: {} }));
