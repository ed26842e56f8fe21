// The hosted sign-in's enrolment: adding a factor while signing in (the app asks for one the person
// does not have yet), and the backup codes shown once after the first. Loaded by main.ts when a
// sign-in reaches that step (web/shared/modules.ts), with its English texts and the list of its
// catalogues in the other languages (ENROLMENT_TEXTS, written in by scripts/build.mjs).
import { createFactorAdding } from '../shared/add-factor.js';
import { createBackupCodesBox } from '../shared/backup-codes.js';
import { byId, setText, setTitle, whileBusy } from '../shared/dom.js';
import { addPart, t } from '../shared/i18n.js';
import { describeError, type EnrolmentStep } from '../shared/messages.js';
import { placeOf, say, warn } from '../shared/notices.js';
import type { FactorType } from '../shared/sign-in.js';
import type { Catalogue } from '../shared/translate.js';

/** The part's texts, as JSON: scripts/build.mjs (LAZY_TEXTS) defines it. */
declare const ENROLMENT_TEXTS: string;

/** What main.ts gives the enrolment. */
export interface EnrolmentHost {
  /** PUT to an enrolment call of the sign-in's API (`totp/request/`). */
  enrol<T>(path: string, body: unknown): Promise<T>;
  client(): string;
  service(): string;
  username(): string;
  /** A factor was added (and its backup codes saved, when it was the first): the sign-in's next step. */
  follow(answer: unknown): void;
}

export interface Enrolment {
  /** Shows the enrolment step, offering `types`. */
  show(types: FactorType[]): void;
}

export async function createEnrolment(host: EnrolmentHost): Promise<Enrolment> {
  await addPart(JSON.parse(ENROLMENT_TEXTS) as { english: Catalogue; listed: string });
  const enrol = byId('enrol');
  const adding = createFactorAdding({
    enrol: host.enrol,
    async act(step: EnrolmentStep, container: HTMLElement | undefined, action: () => Promise<void>) {
      await whileBusy(container, async () => {
        try {
          await action();
        } catch (error) {
          warn(describeError(error, step), placeOf(error, container ?? enrol));
        }
      });
    },
    async added(message, answer) {
      const { backup_codes: codes } = answer as { backup_codes?: string[] };
      if (codes) {
        // The first way to verify: its backup codes are shown once, before going back to the app.
        enrol.hidden = true;
        byId('backup').hidden = false;
        setText(byId('backup-intro'), () => `${message} ${t('sign-in.backup.intro')}`);
        setText(byId('backup-done'), () => t('sign-in.backup.done', { client: host.client() }));
        setTitle(() => t('sign-in.backup.documentTitle', { service: host.service() }));
        backupBox.show(codes);
        afterBackupCodes = () => host.follow(answer);
        return;
      }
      say(message, enrol);
      host.follow(answer);
    },
  });

  /** What the backup codes' "continue" does: the sign-in's next step, kept while the codes are on screen. */
  let afterBackupCodes = () => {};
  const backupBox = createBackupCodesBox({
    owner: host.username,
    saved: () => afterBackupCodes(),
  });

  function show(types: FactorType[]) {
    byId('sign-in').hidden = true;
    const onlyPasskeys = types.length === 1 && types[0] === 'webauthn';
    setText(byId('enrol-title'), () => (onlyPasskeys ? t('sign-in.enrol.titlePasskey') : t('sign-in.enrol.title')));
    setText(byId('enrol-intro'), () =>
      onlyPasskeys
        ? t('sign-in.enrol.introPasskey', { client: host.client() })
        : t('sign-in.enrol.intro', { client: host.client() }),
    );
    adding.closeForms();
    adding.offer(types);
    enrol.hidden = false;
    setTitle(() =>
      onlyPasskeys
        ? t('sign-in.enrol.documentTitlePasskey', { service: host.service() })
        : t('sign-in.enrol.documentTitle', { service: host.service() }),
    );
    byId('enrol-title').focus();
  }

  return { show };
}
