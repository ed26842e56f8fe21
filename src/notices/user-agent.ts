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
 * A User-Agent as a person reads it in a notice: "Firefox 121 on Windows", made only of the names
 * above and the version's digits; undefined for anything else (the header is the caller's to
 * choose, and may carry a link or words meant to mislead the reader).
 */
export function describeUserAgent(userAgent: string | undefined): string | undefined {
  if (!userAgent) return undefined;
  const browser = BROWSERS.map(([pattern, name]) => {
    const version = pattern.exec(userAgent)?.[1];
    return version && `${name} ${version}`;
  }).find(Boolean);
  if (!browser) return undefined;
  const system = SYSTEMS.find(([pattern]) => pattern.test(userAgent))?.[1];
  return system ? `${browser} on ${system}` : browser;
}
