import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The longest description handed over in its cookie, URL-encoded: under the 4096 bytes a browser
 * keeps of a cookie's name and value together.
 */
const MAX_HANDED_DESCRIPTION = 3800;

/**
 * The service's cookies, written here once with their flags (CONTRACT §18): HttpOnly, SameSite=Lax,
 * Path=/, and, when the issuer is https, Secure with the __Host- prefix (no subdomain may set or
 * shadow them). An http issuer (development on localhost) gets them without Secure, which a
 * browser would not store there.
 */
export function createCookies(issuer: string) {
  const isSecure = issuer.startsWith('https:');
  const name = (base: string) => (isSecure ? `__Host-${base}` : base);
  const names = {
    browser: name('mfa-browser'),
    session: name('mfa-session'),
    device: name('mfa-device'),
    description: name('mfa-sign-in'),
  } as const;
  const flags = { httpOnly: true, sameSite: 'lax', path: '/', secure: isSecure } as const;

  return {
    /**
     * What the browser flow reads: its binding to sign-ins in progress, its sign-in session, a
     * remembered device's token (CONTRACT §19), and the User-Agent that names the device.
     */
    read(request: FastifyRequest) {
      return {
        browserSecret: request.cookies[names.browser],
        sessionSecret: request.cookies[names.session],
        deviceSecret: request.cookies[names.device],
        userAgent: request.headers['user-agent'],
      };
    },
    /** Binds sign-ins in progress to this browser, for as long as it runs (no expiry). */
    setBrowser(reply: FastifyReply, secret: string): void {
      reply.setCookie(names.browser, secret, flags);
    },
    /** The sign-in session's cookie, until the session's own end. */
    setSession(reply: FastifyReply, secret: string, expiresAt: Date): void {
      reply.setCookie(names.session, secret, { ...flags, expires: expiresAt });
    },
    /** A remembered device's token, until the device's own end. */
    setDevice(reply: FastifyReply, secret: string, expiresAt: Date): void {
      reply.setCookie(names.device, secret, { ...flags, expires: expiresAt });
    },
    /**
     * A sign-in's description (`<interaction id>.<the JSON GET …/sign-in/{id}/ answers>`), handed
     * to the page with the authorization endpoint's answer, which is the page itself: the page
     * learns its sign-in's id from it, and need not ask for the description. The one cookie the
     * page's script reads (not HttpOnly: it holds nothing that GET does not give the same page),
     * for a minute; the page deletes it once read.
     */
    setSignInDescription(reply: FastifyReply, interactionId: string, description: object): void {
      const json = JSON.stringify(description);
      // Browsers keep a cookie of up to 4096 bytes: a longer description (a passkey step naming
      // many credentials) is left out, and the page asks the API for it.
      const handed = encodeURIComponent(json).length <= MAX_HANDED_DESCRIPTION ? json : '';
      reply.setCookie(names.description, `${interactionId}.${handed}`, {
        ...flags,
        httpOnly: false,
        maxAge: 60,
      });
    },
    clearSession(reply: FastifyReply): void {
      reply.clearCookie(names.session, flags);
    },
  };
}

export type Cookies = ReturnType<typeof createCookies>;
