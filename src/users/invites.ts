import { randomUUID } from 'node:crypto';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import type { AuditTrail, RequestContext } from '../audit/audit-trail.js';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import { ServiceError } from '../errors.js';
import { acrOf, type LoginProof } from '../logins/step-up.js';
import type { WebauthnFactor } from '../mfa/factors/webauthn.js';
import type { TokenIssuer, TokenResponse } from '../oauth/token-issuer.js';
import type { Store } from '../store/store.js';

/** CONTRACT §19: an invite works once, for 24 hours. */
const INVITE_TTL_MS = 24 * 3_600_000;

/** The client recorded in the tokens an invite gives: the account page's, the seed's public client. */
const ACCOUNT_PAGE_CLIENT_ID = 'public';

/**
 * Invites (CONTRACT §19): a one-time link, stored hashed, that lets its holder make an account's
 * first passkey on the account page (createInviteRedemption), and signs them in with it. For
 * accounts made without a password, or an operator helping someone in again.
 */
export function createInvites({
  store,
  audit,
  clock,
  issuer,
}: {
  store: Store;
  audit: AuditTrail;
  clock: Clock;
  issuer: string;
}) {
  /**
   * A new invite for the user (earlier unused ones stop working): its link, shown this once. The
   * token rides in the fragment, which browsers never send to a server or into a log.
   */
  async function issueInvite(userId: string, context?: RequestContext): Promise<{ url: string; expiresAt: Date }> {
    const user = await store.users.findUserById(userId);
    if (!user) throw new ServiceError('not_found', 'no user has this id');
    if (user.factors.length > 0) {
      throw new ServiceError(
        'mfa_already_enabled',
        "an invite makes an account's first passkey, and this account has second factors: reset its MFA first (DELETE /admin/users/{id}/mfa)",
      );
    }
    const now = clock.now();
    const token = randomToken(32);
    const expiresAt = new Date(now.getTime() + INVITE_TTL_MS);
    await store.transaction(async (tx) => {
      await tx.invites.replaceInvite({ tokenHash: sha256(token), userId, expiresAt }, now);
      await audit.record('invite_issued', 'succeeded', { userId, context }, tx);
    });
    return { url: `${issuer}/account/#invite=${token}`, expiresAt };
  }

  return { issueInvite };
}

export type Invites = ReturnType<typeof createInvites>;

/** The account page's side of an invite: the first passkey, which spends it and signs the person in. */
export function createInviteRedemption({
  store,
  passkeys,
  tokens,
  audit,
  clock,
}: {
  store: Store;
  passkeys: Pick<WebauthnFactor, 'requestEnrolment' | 'confirmEnrolment'>;
  tokens: TokenIssuer;
  audit: AuditTrail;
  clock: Clock;
}) {
  /** Registration options for the invite's account's first passkey; throws 410 `invite_expired`. */
  async function passkeyOptions(token: string, name?: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    return passkeys.requestEnrolment(await loginOf(token), name);
  }

  /**
   * Adds the passkey the browser made and spends the invite, once (a response that does not verify
   * leaves it usable); answers tokens of a login proved by that passkey, and the username.
   */
  async function accept(
    token: string,
    credential: Record<string, unknown>,
    name: string | undefined,
    context: RequestContext,
  ): Promise<{ tokens: TokenResponse; username: string }> {
    const login = await loginOf(token);
    const added = await passkeys.confirmEnrolment(login, credential, name, context, async () => {
      if (!(await store.invites.spendInvite(sha256(token), clock.now()))) throw expired();
      await audit.record('invite_used', 'succeeded', { userId: login.userId, context });
    });
    const user = await store.users.findUserById(login.userId);
    if (!user) throw expired();
    const amr = added.isUserVerified ? ['hwk', 'user'] : ['hwk'];
    const issued = await tokens.startLogin(
      {
        userId: user.id,
        clientId: ACCOUNT_PAGE_CLIENT_ID,
        scope: '',
        amr,
        acr: acrOf(amr),
        authTime: login.authTime,
        sessionId: login.sessionId,
      },
      user.sessionGeneration,
    );
    if (!issued) throw expired();
    await audit.record('login', 'succeeded', {
      userId: user.id,
      context,
      detail: { amr: amr.join(' '), flow: 'invite' },
    });
    return { tokens: issued, username: user.username };
  }

  /** The login an invite stands for while its passkey is made: fresh, proving nothing yet. */
  async function loginOf(token: string): Promise<LoginProof> {
    const invite = await store.invites.findLiveInvite(sha256(token), clock.now());
    if (!invite) throw expired();
    return {
      userId: invite.userId,
      amr: [],
      acr: 'aal1',
      authTime: Math.floor(clock.now().getTime() / 1000),
      sessionId: randomUUID(),
    };
  }

  return { passkeyOptions, accept };
}

export type InviteRedemption = ReturnType<typeof createInviteRedemption>;

function expired(): ServiceError {
  return new ServiceError(
    'invite_expired',
    'this invite was used, replaced or has expired (they work once, for 24 hours); ask for a new one',
  );
}
