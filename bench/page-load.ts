import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { PAGE_HEADERS } from '../src/http/routes/pages.js';
import { launchChromium } from '../test/support/browser.js';
import { authorizationRequest, median } from './measure.js';

/** What one load transferred (response headers and bodies as sent, compressed), by kind, and its first paint. */
export interface PageLoad {
  bytes: { html: number; script: number; style: number; icon: number; catalogue: number; api: number; other: number };
  totalBytes: number;
  firstContentfulPaintMs: number;
  /** The password form was on screen when the load was read (the page works, not only paints). */
  showsForm: boolean;
  /**
   * When, after the navigation's start (the authorization request), what the first paint may wait
   * for had come (ms): the HTML (after the redirect), the style sheet (none when it is in the
   * HTML), the last script file, the HTML parsed (domInteractive), and the sign-in's state (the
   * API's answer, after which the form shows). Optional: the whole bench's medians leave them out.
   */
  waits?: { htmlMs: number; styleMs?: number; scriptsMs: number; parsedMs: number; stateMs: number };
}

export interface PageLoadFigures {
  /** The browser's language: English (the script carries it) or German (a catalogue is fetched). */
  language: 'en' | 'de';
  loads: PageLoad[];
  /** Medians of the loads, each kind's and the total's apart. */
  median: Omit<PageLoad, 'showsForm'>;
  /**
   * The floor: the median first contentful paint of a bare page (one paragraph from a bare
   * node:http server) loaded the same way, cold, in the same browser just before.
   */
  barePageFirstPaintMs: number;
  /**
   * The same bare page with the hosted sign-in's Cross-Origin-Opener-Policy (same-origin): a page
   * with it opens in a browsing context group of its own, so Chromium starts it a renderer of its own
   * where a page without it reuses the one the tab has (docs/PERFORMANCE.md).
   */
  barePageWithCoopFirstPaintMs: number;
}

/** The app the sign-in is for: its id and a registered redirect URI. */
export interface PageLoadClient {
  client_id: string;
  redirect_uri: string;
}

/**
 * `loads` cold loads of the hosted sign-in for each language: each in a fresh browser context (no
 * cache, no cookies), starting at the app's authorization request, whose redirect opens the page;
 * one load first, not counted, so that the browser's own start is not in the first figure.
 */
export async function measureHostedSignInLoads(
  base: string,
  client: PageLoadClient,
  loads = 5,
): Promise<PageLoadFigures[]> {
  const browser = await launchChromium();
  try {
    await loadOnce(browser, base, client, 'en');
    const figures: PageLoadFigures[] = [];
    for (const language of ['en', 'de'] as const) {
      const barePageFirstPaintMs = await barePageFirstPaint(browser, loads, {});
      const barePageWithCoopFirstPaintMs = await barePageFirstPaint(browser, loads, {
        'cross-origin-opener-policy': PAGE_HEADERS['cross-origin-opener-policy'],
      });
      const each: PageLoad[] = [];
      for (let index = 0; index < loads; index += 1) each.push(await loadOnce(browser, base, client, language));
      const med = (pick: (load: PageLoad) => number) => median(each.map(pick));
      const kinds = Object.keys(each[0]?.bytes ?? {}) as (keyof PageLoad['bytes'])[];
      figures.push({
        language,
        loads: each,
        median: {
          bytes: Object.fromEntries(kinds.map((kind) => [kind, med((load) => load.bytes[kind])])) as PageLoad['bytes'],
          totalBytes: med((load) => load.totalBytes),
          firstContentfulPaintMs: Math.round(med((load) => load.firstContentfulPaintMs) * 10) / 10,
          waits: medianWaits(each),
        },
        barePageFirstPaintMs,
        barePageWithCoopFirstPaintMs,
      });
    }
    return figures;
  } finally {
    await browser.close();
  }
}

/** Each wait's median over `loads`, to the millisecond. */
function medianWaits(loads: PageLoad[]): PageLoad['waits'] {
  const of = (pick: (waits: NonNullable<PageLoad['waits']>) => number | undefined) => {
    const values = loads.map((load) => (load.waits ? pick(load.waits) : undefined));
    return values.every((value) => value !== undefined) ? Math.round(median(values as number[])) : undefined;
  };
  const styleMs = of((waits) => waits.styleMs);
  return {
    htmlMs: of((waits) => waits.htmlMs) ?? Number.NaN,
    ...(styleMs !== undefined && { styleMs }),
    scriptsMs: of((waits) => waits.scriptsMs) ?? Number.NaN,
    parsedMs: of((waits) => waits.parsedMs) ?? Number.NaN,
    stateMs: of((waits) => waits.stateMs) ?? Number.NaN,
  };
}

async function loadOnce(browser: Browser, base: string, client: PageLoadClient, language: 'en' | 'de') {
  const context = await browser.newContext({ locale: language === 'de' ? 'de-DE' : 'en-US' });
  try {
    const page = await context.newPage();
    const { url: authorize } = authorizationRequest(base, client);
    await page.goto(authorize.toString(), { waitUntil: 'networkidle' });
    if (!new URL(page.url()).pathname.endsWith('/sign-in/')) throw new Error(`no sign-in page: at ${page.url()}`);
    const showsForm = await page.locator('input[type="password"]').first().isVisible();
    const entries = await page.evaluate(() => {
      // Run in the page; the bench's own types know Node's Performance API, not the browser's entry types.
      // No named function in here: tsx would wrap it in a helper the page does not have.
      type Timing = { name: string; transferSize: number; responseEnd: number; domInteractive?: number };
      const navigation = (performance.getEntriesByType('navigation' as never) as unknown as Timing[])[0];
      const resources = performance.getEntriesByType('resource' as never) as unknown as Timing[];
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      return {
        navigation: navigation
          ? {
              name: navigation.name,
              transferSize: navigation.transferSize,
              responseEnd: navigation.responseEnd,
              domInteractive: navigation.domInteractive ?? Number.NaN,
            }
          : undefined,
        resources: resources.map((entry) => ({
          name: entry.name,
          transferSize: entry.transferSize,
          responseEnd: entry.responseEnd,
        })),
        firstContentfulPaintMs: paint?.startTime ?? Number.NaN,
      };
    });
    if (!entries.navigation) throw new Error('no navigation entry');
    const bytes: PageLoad['bytes'] = { html: 0, script: 0, style: 0, icon: 0, catalogue: 0, api: 0, other: 0 };
    bytes.html = entries.navigation.transferSize;
    for (const entry of entries.resources) bytes[kindOf(new URL(entry.name).pathname)] += entry.transferSize;
    const totalBytes = Object.values(bytes).reduce((sum, value) => sum + value, 0);
    const endOf = (kind: keyof PageLoad['bytes']) =>
      entries.resources
        .filter((entry) => kindOf(new URL(entry.name).pathname) === kind)
        .reduce(
          (latest, entry) => (Number.isNaN(latest) ? entry.responseEnd : Math.max(latest, entry.responseEnd)),
          Number.NaN,
        );
    const waits: PageLoad['waits'] = {
      htmlMs: entries.navigation.responseEnd,
      ...(bytes.style > 0 && { styleMs: endOf('style') }),
      scriptsMs: endOf('script'),
      parsedMs: entries.navigation.domInteractive,
      stateMs: endOf('api'),
    };
    return { bytes, totalBytes, firstContentfulPaintMs: entries.firstContentfulPaintMs, showsForm, waits };
  } finally {
    await context.close();
  }
}

/**
 * The median first contentful paint of `loads` cold loads of a one-paragraph page from a bare
 * server, answered with `headers`.
 */
async function barePageFirstPaint(browser: Browser, loads: number, headers: Record<string, string>): Promise<number> {
  const html =
    '<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign in</title><p>Sign in to the app</p></html>';
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const paints: number[] = [];
    for (let index = 0; index < loads; index += 1) {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(url, { waitUntil: 'load' });
        paints.push(
          await page.evaluate(async () => {
            // The paint entry comes a frame after load at the earliest.
            for (let tries = 0; tries < 50; tries += 1) {
              const paint = performance.getEntriesByName('first-contentful-paint')[0];
              if (paint) return paint.startTime;
              await new Promise((resolve) => setTimeout(resolve, 10));
            }
            return Number.NaN;
          }),
        );
      } finally {
        await context.close();
      }
    }
    return Math.round(median(paints) * 10) / 10;
  } finally {
    server.close();
  }
}

function kindOf(pathname: string): keyof PageLoad['bytes'] {
  if (pathname.startsWith('/mfa/')) return 'api';
  if (pathname.endsWith('.js')) return 'script';
  if (pathname.endsWith('.css')) return 'style';
  if (pathname.endsWith('.svg')) return 'icon';
  if (pathname.endsWith('.json')) return 'catalogue';
  return 'other';
}

/** One line: each language's median bytes by kind, the total and the first paint beside their targets. */
export function describePageLoads(figures: PageLoadFigures[]): string {
  return figures
    .map(({ language, loads, median: med, barePageFirstPaintMs, barePageWithCoopFirstPaintMs }) => {
      const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
      const kinds = Object.entries(med.bytes)
        .filter(([, bytes]) => bytes > 0)
        .map(([kind, bytes]) => `${kind} ${kb(bytes)}`)
        .join(', ');
      const forms = loads.filter((load) => load.showsForm).length;
      const waits = med.waits;
      const arrived = waits
        ? `; arrived by: HTML ${waits.htmlMs}, style ${waits.styleMs ?? 'in the HTML'}, scripts ${waits.scriptsMs}, ` +
          `parsed ${waits.parsedMs}, the sign-in's state ${waits.stateMs} ms`
        : '';
      return (
        `hosted sign-in, first load (${language}), median of ${loads.length} cold loads: ${kb(med.totalBytes)} transferred (≤ 25 KB) ` +
        `[${kinds}], first contentful paint ${med.firstContentfulPaintMs} ms (≤ 100 ms; a bare page's ${barePageFirstPaintMs} ms, ${barePageWithCoopFirstPaintMs} ms with the page's COOP)${arrived}; form shown in ${forms} of ${loads.length}`
      );
    })
    .join('\n');
}
