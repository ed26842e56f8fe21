// The language stored for the account (CONTRACT §22): the page, and the mail and SMS the service
// sends, follow it; "As my browser" (null) follows the browser's languages instead. A <select> and
// a Save button rather than saving on each change: Chromium fires `change` on every arrow key of a
// closed <select>, which would switch the page while someone only moves through the list.
import { byId, el } from '../shared/dom.js';
import { LANGUAGE_NAMES, LANGUAGES, type Language, onLanguageChange, t, useLanguage } from '../shared/i18n.js';
import { say } from '../shared/notices.js';
import type { Api } from './api.js';
import type { Step } from './messages.js';

type Act = (step: Step, container: HTMLElement | undefined, action: () => Promise<void>) => Promise<void>;

/** GET and PUT /mfa/language/: the stored language (null: the browser's), and those the service ships. */
interface LanguageChoice {
  language: Language | null;
  languages: Language[];
}

export function createLanguagePanel(api: Api, act: Act) {
  const panel = byId('language-panel');
  const form = byId<HTMLFormElement>('language-form');
  const choice = byId<HTMLSelectElement>('language-choice');
  let stored: Language | null = null;
  let offered: readonly Language[] = LANGUAGES;

  function render() {
    const options = [
      el('option', { value: '' }, t('account.language.browser')),
      // Each language in its own name, and marked as such for screen readers.
      ...offered
        .filter((code) => code in LANGUAGE_NAMES)
        .map((code) => el('option', { value: code, lang: code }, LANGUAGE_NAMES[code])),
    ];
    choice.replaceChildren(...options);
    choice.value = stored ?? '';
  }
  onLanguageChange(render);

  /**
   * Reads the stored language and shows the page in it (in the browser's languages when none is
   * stored). A failure (the service unreachable, the login ended) leaves the page in the
   * browser's languages and the choice hidden: nothing to say, nothing to change.
   */
  async function load(): Promise<void> {
    try {
      ({ language: stored, languages: offered } = await api.call<LanguageChoice>('GET', 'mfa/language/', {
        stepUp: false,
      }));
      panel.hidden = false;
    } catch {
      stored = null;
      panel.hidden = true;
    }
    await useLanguage(stored ? [stored] : undefined);
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const wanted = (choice.value || null) as Language | null;
    void act('other', form, async () => {
      const saved = await api.call<LanguageChoice>('PUT', 'mfa/language/', { body: { language: wanted } });
      stored = saved.language;
      offered = saved.languages;
      await useLanguage(stored ? [stored] : undefined);
      say(t('account.language.saved'), form);
      choice.focus();
    });
  });

  return {
    load,
    /** The browser's languages again, when the account is left. */
    async forget(): Promise<void> {
      stored = null;
      panel.hidden = true;
      await useLanguage();
    },
  };
}
