// Backup codes as every page shows a new set (web/shared/backup-codes-box.html): once, with
// Download, Copy and Print, gone from the page when the person says they saved them.
import { byId, el, grouped } from './dom.js';
import { clearNotices, say, warn } from './notices.js';

/** `owner`: whose codes (the username); `saved`: the person put them away. */
export function createBackupCodesBox({ owner, saved }: { owner: () => string; saved: () => void }) {
  const box = byId('backup-codes-box');
  const list = byId('backup-codes');
  let codes: string[] = [];

  function show(newCodes: string[]): void {
    codes = newCodes;
    list.replaceChildren(...codes.map((code) => el('li', {}, grouped(code))));
    byId('backup-codes-for').textContent =
      `For ${owner()} at ${location.host}, made ${new Date().toISOString().slice(0, 10)}.`;
    box.hidden = false;
    byId('backup-codes-title').focus();
  }

  function close(): void {
    codes = [];
    list.replaceChildren();
    box.hidden = true;
    byId('backup-codes-for').textContent = '';
  }

  /** The codes as a text file or the clipboard hold them: whose, when, and one code a line. */
  function text(): string {
    return [
      `Backup codes for ${owner()} at ${location.origin}`,
      `Made ${new Date().toISOString().slice(0, 10)}. Each code signs you in once; a new set cancels these.`,
      '',
      ...codes.map((code) => grouped(code)),
      '',
    ].join('\n');
  }

  byId('backup-download').addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([text()], { type: 'text/plain;charset=utf-8' }));
    const link = el('a', { href: url, download: 'backup-codes.txt' });
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  });

  byId('backup-copy').addEventListener('click', () => {
    navigator.clipboard.writeText(text()).then(
      () => say('Codes copied. Paste them somewhere safe, such as a password manager.', list),
      () => warn('This browser did not let the page copy: download or print the codes instead.', list),
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
