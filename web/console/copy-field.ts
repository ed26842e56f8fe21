import { byId } from '../shared/dom.js';
import { say, warn } from '../shared/notices.js';

/** The Copy button `buttonId` beside the read-only field `fieldId`: copies it, or selects it when the browser will not. */
export function copyOnClick(buttonId: string, fieldId: string, what: string): void {
  const field = byId<HTMLInputElement>(fieldId);
  byId(buttonId).addEventListener('click', () => {
    navigator.clipboard.writeText(field.value).then(
      () => say(`The ${what} is copied.`, field),
      () => {
        field.select();
        warn(`The ${what} could not be copied: it is selected, copy it yourself.`, field);
      },
    );
  });
}
