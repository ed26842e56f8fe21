import type { AuditTrail } from '../../audit/audit-trail.js';
import { ServiceError } from '../../errors.js';
import type { RememberedDevices } from '../../logins/remembered-devices.js';
import type { App, RequestGuard } from '../app-types.js';
import { contextOf } from '../request-context.js';
import { DeviceIdParams, ErrorBody, RememberedDeviceList } from '../schemas.js';

/** The person's remembered devices (CONTRACT §19): listed, and forgotten one by one. */
export function deviceRoutes(
  app: App,
  {
    devices,
    audit,
    requireAccessToken,
  }: { devices: RememberedDevices; audit: AuditTrail; requireAccessToken: RequestGuard },
) {
  app.get(
    '/mfa/devices/',
    { schema: { response: { 200: RememberedDeviceList, 401: ErrorBody } }, onRequest: requireAccessToken },
    async (request) => ({
      devices: (await devices.list(request.principal.userId)).map((device) => ({
        id: device.id,
        browser: device.browser,
        created_at: device.createdAt.toISOString(),
        last_used_at: device.lastUsedAt.toISOString(),
        expires_at: device.expiresAt.toISOString(),
      })),
    }),
  );

  app.delete(
    '/mfa/devices/:id/',
    {
      schema: { params: DeviceIdParams, response: { 204: {}, 401: ErrorBody, 404: ErrorBody } },
      onRequest: requireAccessToken,
    },
    async (request, reply) => {
      const { userId } = request.principal;
      if (!(await devices.forget(userId, request.params.id))) {
        throw new ServiceError('not_found', 'no remembered device of yours has this id; GET /mfa/devices/ lists them');
      }
      await audit.record('device_forgotten', 'succeeded', { userId, context: contextOf(request) });
      return reply.code(204).send();
    },
  );
}
