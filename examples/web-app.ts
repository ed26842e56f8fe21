// A server-rendered web app that signs people in with this service (OpenID Connect, code flow with
// PKCE) through panva's openid-client, configured with nothing but the issuer, its client_id and
// secret, and its redirect URI. Register it first (README: Sign in from your app), then:
//   ISSUER=http://localhost:8000 CLIENT_ID=… CLIENT_SECRET=… PORT=3000 node --import tsx examples/web-app.ts
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import * as client from 'openid-client';

interface WebAppSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Where the service sends the browser back with the code: this app's /callback. */
  redirectUri: string;
  /** Where the service sends the browser after signing out: this app's /. */
  postLogoutRedirectUri: string;
}

/** What the app remembers of one browser, on the server; the browser holds only the key. */
interface Session {
  /** A sign-in on its way: what /callback must check the answer against. */
  pending?: { codeVerifier: string; state: string; nonce: string };
  user?: { username: string; amr: string[]; acr: string; idToken: string };
}

const COOKIE = 'webapp_session';

export function createWebApp(settings: WebAppSettings): Server {
  // In memory, for the example: a real app keeps sessions in its store, with an expiry.
  const sessions = new Map<string, Session>();
  const isSecure = settings.redirectUri.startsWith('https:');
  let discovered: Promise<client.Configuration> | undefined;

  /** The service's metadata, read once (and again after a failed read). */
  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(new URL(settings.issuer), settings.clientId, settings.clientSecret, undefined, {
        // For local development only: openid-client refuses an http issuer unless told.
        execute: settings.issuer.startsWith('http:') ? [client.allowInsecureRequests] : [],
      })
      .catch((error) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  }

  function sessionOf(request: IncomingMessage): { id: string; session: Session } | undefined {
    const id = new RegExp(`(?:^|;\\s*)${COOKIE}=([\\w-]+)`).exec(request.headers.cookie ?? '')?.[1];
    const session = id === undefined ? undefined : sessions.get(id);
    return id === undefined || session === undefined ? undefined : { id, session };
  }

  /** A new session under a new key: a key known before sign-in (session fixation) is never signed in. */
  function startSession(response: ServerResponse, session: Session): void {
    const id = randomBytes(32).toString('base64url');
    sessions.set(id, session);
    // SameSite=Lax: sent on the service's redirect back (a top-level GET), not on another site's POST.
    const flags = `HttpOnly; SameSite=Lax; Path=/${isSecure ? '; Secure' : ''}`;
    response.setHeader('set-cookie', `${COOKIE}=${id}; ${flags}`);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', settings.redirectUri);
    const current = sessionOf(request);

    if (url.pathname === '/' && request.method === 'GET') {
      const user = current?.session.user;
      if (!user) return page(response, 200, '<p>You are not signed in.</p><p><a href="/login">Sign in</a></p>');
      return page(
        response,
        200,
        `<p>Signed in as ${escapeHtml(user.username)}</p>
<p>How: amr ${escapeHtml(user.amr.join(' '))}, acr ${escapeHtml(user.acr)}</p>
<form method="post" action="/logout"><button>Sign out</button></form>`,
      );
    }

    if (url.pathname === '/login' && request.method === 'GET') {
      const config = await configuration();
      const pending = {
        codeVerifier: client.randomPKCECodeVerifier(),
        state: client.randomState(),
        nonce: client.randomNonce(),
      };
      if (current) sessions.delete(current.id);
      startSession(response, { pending });
      const authorizationUrl = client.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri,
        scope: 'openid profile',
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      return redirect(response, authorizationUrl.href);
    }

    if (url.pathname === '/callback' && request.method === 'GET') {
      const pending = current?.session.pending;
      if (!current || !pending)
        return page(response, 400, '<p>No sign-in was started here.</p><p><a href="/">Back</a></p>');
      const config = await configuration();
      try {
        // Checks state, iss (RFC 9207), the code exchange with the PKCE verifier, and the ID token.
        const tokens = await client.authorizationCodeGrant(config, url, {
          pkceCodeVerifier: pending.codeVerifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
        });
        const claims = tokens.claims();
        if (!claims || !tokens.id_token) throw new Error('no ID token');
        // OpenID Connect Core §5.4: profile claims such as preferred_username come from userinfo.
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        sessions.delete(current.id);
        startSession(response, {
          user: {
            username: String(info.preferred_username ?? claims.sub),
            amr: Array.isArray(claims.amr) ? claims.amr.map(String) : [],
            acr: String(claims.acr ?? ''),
            idToken: tokens.id_token,
          },
        });
        return redirect(response, '/');
      } catch (error) {
        sessions.delete(current.id);
        return page(
          response,
          400,
          `<p>Sign-in failed: ${escapeHtml(reason(error))}</p><p><a href="/login">Try again</a></p>`,
        );
      }
    }

    if (url.pathname === '/logout' && request.method === 'POST') {
      const user = current?.session.user;
      if (!current || !user) return redirect(response, '/');
      sessions.delete(current.id);
      response.setHeader('set-cookie', `${COOKIE}=; Max-Age=0; HttpOnly; SameSite=Lax; Path=/`);
      // RP-Initiated Logout 1.0: the hint names the sign-in, so the service ends it without asking.
      const endSession = client.buildEndSessionUrl(await configuration(), {
        id_token_hint: user.idToken,
        post_logout_redirect_uri: settings.postLogoutRedirectUri,
      });
      return redirect(response, endSession.href);
    }

    return page(response, 404, '<p>Not found.</p>');
  }

  return createServer((request, response) => {
    handle(request, response).catch((error) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : error}\n`);
      if (!response.headersSent) page(response, 502, '<p>The sign-in service could not be reached.</p>');
    });
  });
}

function page(response: ServerResponse, status: number, body: string): void {
  response
    .writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      // No form-action: the sign-out form's answer is a redirect to the service, which it would block.
      'content-security-policy': "default-src 'none'; base-uri 'none'; frame-ancestors 'none'",
      'cache-control': 'no-store',
    })
    .end(`<!doctype html><meta charset="utf-8"><title>Acme</title>\n${body}\n`);
}

function redirect(response: ServerResponse, location: string): void {
  response.writeHead(303, { location, 'cache-control': 'no-store' }).end();
}

/** openid-client's message, with what it wraps (which check failed) and the service's error code. */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = 'error' in error && typeof error.error === 'string' ? ` (${error.error})` : '';
  return `${error.message}${code}${error.cause instanceof Error ? `: ${error.cause.message}` : ''}`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'))) {
  const port = Number(process.env.PORT ?? 3000);
  const origin = `http://localhost:${port}`;
  createWebApp({
    issuer: process.env.ISSUER ?? 'http://localhost:8000',
    clientId: process.env.CLIENT_ID ?? '',
    clientSecret: process.env.CLIENT_SECRET ?? '',
    redirectUri: `${origin}/callback`,
    postLogoutRedirectUri: `${origin}/`,
  }).listen(port, '127.0.0.1', () => {
    process.stdout.write(`web app on ${origin}, signing in with ${process.env.ISSUER ?? 'http://localhost:8000'}\n`);
  });
}
