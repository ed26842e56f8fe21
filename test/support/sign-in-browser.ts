import assert from 'node:assert/strict';

/**
 * A browser as the hosted sign-in sees it, without running the page: it keeps cookies, follows the
 * authorization endpoint's redirects by hand, and calls the sign-in API as the page's script does
 * (JSON, the CSRF token the API gave it, its own origin). The page itself is tested in Chromium.
 */
export class SignInBrowser {
  readonly cookies = new Map<string, string>();

  /**
   * `origin`: the service's (its ISSUER's); `address`: where it listens, when that is elsewhere (an
   * https issuer in front of a test server that speaks http): requests to `origin` go there.
   */
  constructor(
    readonly origin: string,
    readonly address = origin,
  ) {}

  /** A request with this browser's cookies; Set-Cookie answers are kept, redirects are not followed. */
  async request(url: string | URL, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const href = String(url);
    const target = href.startsWith(`${this.origin}/`) ? this.address + href.slice(this.origin.length) : href;
    const response = await fetch(target, {
      ...init,
      redirect: 'manual',
      headers: { ...init.headers, ...(cookie ? { cookie } : {}) },
    });
    for (const header of response.headers.getSetCookie()) {
      const [pair = ''] = header.split(';');
      const [name = '', ...value] = pair.split('=');
      const isCleared = /expires=Thu, 01 Jan 1970/i.test(header) || /max-age=0/i.test(header);
      if (isCleared) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value.join('='));
    }
    return response;
  }

  /**
   * Opens an authorization URL: where the browser lands back at the app (the redirect's
   * Location), or the hosted sign-in the authorization endpoint answered with (the page itself,
   * read whole, with the sign-in's description in a cookie).
   */
  async authorize(url: string | URL): Promise<{ back: URL } | { signIn: SignInApi }> {
    const response = await this.request(url);
    const body = await response.text();
    if (response.status === 303) return { back: new URL(response.headers.get('location') ?? '', url) };
    assert.equal(response.status, 200, `the authorization endpoint answered ${response.status}: ${body.slice(0, 300)}`);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    return { signIn: await SignInApi.handedOver(this) };
  }

  /** Opens the authorization URL and expects the hosted sign-in. */
  async startSignIn(url: string | URL): Promise<SignInApi> {
    const opened = await this.authorize(url);
    assert.ok('signIn' in opened, `the request went straight back to the app: ${'back' in opened && opened.back}`);
    return opened.signIn;
  }
}

/** One sign-in in progress, through the API the page calls. */
export class SignInApi {
  csrfToken = '';
  /** The state the sign-in opened in (handed over, or GET). */
  opened: any;

  constructor(
    readonly browser: SignInBrowser,
    readonly id: string,
  ) {}

  private url(path: string): string {
    return `${this.browser.origin}/mfa/oauth2/sign-in/${this.id}/${path}`;
  }

  /**
   * The sign-in the authorization endpoint's answer named, as the page's script finds it: the
   * description's cookie (`<id>.<JSON>`) read and deleted, its JSON taken, or, when the cookie
   * held none (too long for a cookie), asked for.
   */
  static async handedOver(browser: SignInBrowser): Promise<SignInApi> {
    const name = [...browser.cookies.keys()].find((cookie) => cookie.endsWith('mfa-sign-in')) ?? '';
    const value = decodeURIComponent(browser.cookies.get(name) ?? '');
    const separator = value.indexOf('.');
    assert.ok(separator > 0, `the page came without its sign-in’s description: ${JSON.stringify(value)}`);
    browser.cookies.delete(name);
    const signIn = new SignInApi(browser, value.slice(0, separator));
    const json = value.slice(separator + 1);
    if (!json) await signIn.open();
    else {
      signIn.opened = JSON.parse(json);
      signIn.csrfToken = signIn.opened.csrf_token;
    }
    return signIn;
  }

  async open(): Promise<any> {
    const response = await this.browser.request(this.url(''));
    const body = (await response.json()) as any;
    assert.equal(response.status, 200, JSON.stringify(body));
    this.csrfToken = body.csrf_token;
    this.opened = body;
    return body;
  }

  /** A call as the page makes it; answers the response itself. */
  send(method: string, path: string, body: unknown = {}, headers: Record<string, string> = {}): Promise<Response> {
    return this.browser.request(this.url(path), {
      method,
      body: JSON.stringify(body),
      headers: {
        'content-type': 'application/json',
        origin: this.browser.origin,
        'x-csrf-token': this.csrfToken,
        ...headers,
      },
    });
  }

  /** `send`, expecting `status`; answers the parsed body. */
  async expect(method: string, path: string, body: unknown, status: number): Promise<any> {
    const response = await this.send(method, path, body);
    const text = await response.text();
    assert.equal(response.status, status, `${method} ${path}: ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  password(username: string, password: string, status = 200) {
    return this.expect('POST', 'password', { username, password }, status);
  }

  secondFactor(body: Record<string, unknown>, status = 200) {
    return this.expect('POST', 'second-factor', body, status);
  }

  cancel() {
    return this.expect('POST', 'cancel', {}, 200);
  }
}
