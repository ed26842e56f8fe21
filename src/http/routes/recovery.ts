import type { BackupCodes } from '../../mfa/backup-codes.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { BackupCodesRemaining, BackupCodesResponse, ErrorBody } from '../schemas.js';

const errors = { 401: ErrorBody, 403: ErrorBody, 409: ErrorBody };

export function recoveryRoutes(
  app: App,
  { backupCodes, requireAccessToken }: { backupCodes: BackupCodes; requireAccessToken: RequestGuard },
) {
  app.post(
    '/mfa/recovery/',
    { schema: { response: { 200: BackupCodesResponse, ...errors } }, onRequest: requireAccessToken },
    async (request) => {
      // Shown this once, with Cache-Control: no-store as every answer (app.ts).
      const codes = await backupCodes.regenerateBackupCodes(request.principal, contextOf(request));
      return { backup_codes: codes };
    },
  );

  app.get(
    '/mfa/recovery/',
    { schema: { response: { 200: BackupCodesRemaining, ...errors } }, onRequest: requireAccessToken },
    async (request) => ({ remaining: await backupCodes.countRemaining(request.principal) }),
  );
}
