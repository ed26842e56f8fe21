/** Browsers by the token that names them, most specific first (Edge and Opera also say Chrome). */
const BROWSERS: [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/\bOPR\/(\d+)/, 'Opera'],
  [/\bSamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/\bFirefox\/(\d+)/, 'Firefox'],
  [/\bFxiOS\/(\d+)/, 'Firefox'],
  [/\bCriOS\/(\d+)/, 'Chrome'],
  [/\bChrom(?:e|ium)\/(\d+)/, 'Chrome'],
  [/\bVersion\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
];

const SYSTEMS: [RegExp, string][] = [
  [/\bAndroid\b/, 'Android'],
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

/**
 * A User-Agent as a person reads it in a notice: "Firefox 121 on Windows", else the first product
 * token ("curl/8.5.0"), cut to 60 characters and stripped of anything but printable ASCII (the
 * header is the caller's to choose); undefined when there is none.
 */
export function describeUserAgent(userAgent: string | undefined): string | undefined {
  const clean = userAgent?.replace(/[^\x20-\x7e]/g, '').trim();
  if (!clean) return undefined;
  const browser = BROWSERS.map(([pattern, name]) => {
    const version = pattern.exec(clean)?.[1];
    return version && `${name} ${version}`;
  }).find(Boolean);
  const system = SYSTEMS.find(([pattern]) => pattern.test(clean))?.[1];
  if (browser) return system ? `${browser} on ${system}` : browser;
  return clean.split(' ')[0]?.slice(0, 60);
}
