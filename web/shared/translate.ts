// Looking a text up in a catalogue: the one part of the pages' languages with no DOM, so that a unit
// test can hold it against i18next (the service's own texts use i18next; the pages do not ship it,
// half of the hosted sign-in's 25 KB budget, issue 33). The catalogues are i18next's format: nested
// keys, {{name}} placeholders, and plural forms key_one, key_other (and _zero, _two, _few, _many
// where CLDR has them) chosen by the browser's Intl.PluralRules, which holds CLDR's rules.

/** One language's texts, nested by area and key. */
export interface Catalogue {
  [key: string]: string | Catalogue;
}

function lookUp(catalogue: Catalogue | undefined, key: string): string | undefined {
  let found: string | Catalogue | undefined = catalogue;
  for (const part of key.split('.')) {
    if (found === undefined || typeof found === 'string') return undefined;
    found = found[part];
  }
  return typeof found === 'string' ? found : undefined;
}

/**
 * The text `key` of `catalogue` (in `language`), else of `fallback`, with its values put in; a
 * number `count` chooses the plural form. The key itself when neither has it, as i18next answers.
 */
export function translate(
  language: string,
  catalogue: Catalogue | undefined,
  fallback: Catalogue,
  key: string,
  values: Record<string, string | number> = {},
): string {
  const inLanguage = (lookIn: Catalogue | undefined, rulesOf: string) => {
    if (typeof values.count === 'number') {
      const form = new Intl.PluralRules(rulesOf).select(values.count);
      return lookUp(lookIn, `${key}_${form}`) ?? lookUp(lookIn, `${key}_other`) ?? lookUp(lookIn, key);
    }
    return lookUp(lookIn, key);
  };
  const text = inLanguage(catalogue, language) ?? inLanguage(fallback, 'en') ?? key;
  return text.replace(/\{\{\s*(\w+)\s*\}\}/g, (placeholder, name: string) =>
    name in values ? String(values[name]) : placeholder,
  );
}
