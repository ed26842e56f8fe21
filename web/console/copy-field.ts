import { byId } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { say, warn } from '../shared/notices.js';

/** What a Copy button copies, and what the console says when it did or could not. */
const SAID = {
  link: { copied: () => t('console.common.copied.link'), notCopied: () => t('console.common.notCopied.link') },
  secret: { copied: () => t('console.common.copied.secret'), notCopied: () => t('console.common.notCopied.secret') },
} as const;

/** The Copy button `buttonId` beside the read-only field `fieldId`: copies it, or selects it when the browser will not. */
export function copyOnClick(buttonId: string, fieldId: string, what: keyof typeof SAID): void {
  const field = byId<HTMLInputElement>(fieldId);
  byId(buttonId).addEventListener('click', () => {
    navigator.clipboard.writeText(field.value).then(
      () => say(SAID[what].copied(), field),
      () => {
        field.select();
        warn(SAID[what].notCopied(), field);
      },
    );
  });
}
