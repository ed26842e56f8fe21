// Backup codes as every page shows a new set (web/shared/backup-codes-box.html): once, with
// Download, Copy and Print, gone from the page when the person says they saved them.
import { byId, el, grouped, setText } from './dom.js';
import { t } from './i18n.js';
import { clearNotices, say, warn } from './notices.js';

/** `owner`: whose codes (the username); `saved`: the person put them away. */
export function createBackupCodesBox({ owner, saved }: { owner: () => string; saved: () => void }) {
  const box = byId('backup-codes-box');
  const list = byId('backup-codes');
  let codes: string[] = [];

  function show(newCodes: string[]): void {
    codes = newCodes;
    list.replaceChildren(...codes.map((code) => el('li', {}, grouped(code))));
    const name = owner();
    const date = new Date().toISOString().slice(0, 10);
    setText(byId('backup-codes-for'), () => t('backupCodes.for', { name, host: location.host, date }));
    box.hidden = false;
    byId('backup-codes-title').focus();
  }

  function close(): void {
    codes = [];
    list.replaceChildren();
    box.hidden = true;
    setText(byId('backup-codes-for'), '');
  }

  /** The codes as a text file or the clipboard hold them: whose, when, and one code a line. */
  function text(): string {
    return [
      t('backupCodes.fileTitle', { name: owner(), host: location.origin }),
      t('backupCodes.fileMade', { date: new Date().toISOString().slice(0, 10) }),
      '',
      ...codes.map((code) => grouped(code)),
      '',
    ].join('\n');
  }

  byId('backup-download').addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([text()], { type: 'text/plain;charset=utf-8' }));
    const link = el('a', { href: url, download: t('backupCodes.fileName') });
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  });

  byId('backup-copy').addEventListener('click', () => {
    navigator.clipboard.writeText(text()).then(
      () => say(t('backupCodes.copied'), list),
      () => warn(t('backupCodes.copyRefused'), list),
    );
  });

  // The print style sheet (web/shared/style.css) prints the codes alone.
  byId('backup-print').addEventListener('click', () => window.print());

  byId('backup-done').addEventListener('click', () => {
    close();
    clearNotices();
    saved();
  });

  return {
    show,
    close,
    list,
    get isOpen() {
      return !box.hidden;
    },
  };
}
