import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The service's cookies, written here once with their flags (CONTRACT §18): HttpOnly, SameSite=Lax,
 * Path=/, and, when the issuer is https, Secure with the __Host- prefix (no subdomain may set or
 * shadow them). An http issuer (development on localhost) gets them without Secure, which a
 * browser would not store there.
 */
export function createCookies(issuer: string) {
  const isSecure = issuer.startsWith('https:');
  const name = (base: string) => (isSecure ? `__Host-${base}` : base);
  const names = { browser: name('mfa-browser'), session: name('mfa-session') } as const;
  const flags = { httpOnly: true, sameSite: 'lax', path: '/', secure: isSecure } as const;

  return {
    /** What the browser flow reads: its binding to sign-ins in progress and its sign-in session. */
    read(request: FastifyRequest): { browserSecret?: string; sessionSecret?: string } {
      return { browserSecret: request.cookies[names.browser], sessionSecret: request.cookies[names.session] };
    },
    /** Binds sign-ins in progress to this browser, for as long as it runs (no expiry). */
    setBrowser(reply: FastifyReply, secret: string): void {
      reply.setCookie(names.browser, secret, flags);
    },
    /** The sign-in session's cookie, until the session's own end. */
    setSession(reply: FastifyReply, secret: string, expiresAt: Date): void {
      reply.setCookie(names.session, secret, { ...flags, expires: expiresAt });
    },
    clearSession(reply: FastifyReply): void {
      reply.clearCookie(names.session, flags);
    },
  };
}

export type Cookies = ReturnType<typeof createCookies>;
