import { ADMIN_TOKEN, expectStatus, nextPhone, type Service } from './service.js';

// What the test files about mail share (CONTRACT §20: notices, password resets, recovery, email
// codes): users whose address an operator gave, so that it counts as verified at once.

export interface MailUser {
  userId: string;
  username: string;
  /** The account's verified address (`<username>@mail.example` unless another was asked for). */
  email: string;
}

/** Where a new user's mail goes: `<username>@mail.example` by default, this address, or none (false). */
export interface MailUserOptions {
  email?: string | false;
}

/** POST /admin/users with `username`, `password` and, unless `email` is false, a verified address. */
export async function createMailUser(
  service: Service,
  username: string,
  password: string,
  options: MailUserOptions = {},
): Promise<MailUser> {
  const email = options.email === undefined ? `${username}@mail.example` : options.email;
  const { id } = await expectStatus(
    service.call('/admin/users', {
      method: 'POST',
      token: ADMIN_TOKEN,
      body: { username, password, ...(email !== false && { email }) },
    }),
    201,
  );
  return { userId: id as string, username, email: email || `${username}@mail.example` };
}

/**
 * `createMailUser` with SMS as the second factor on a fresh number, enrolled by a password-only
 * login whose requests carry `headers` (a User-Agent, an Accept-Language); the clock is then moved
 * past the resend cooldown.
 */
export async function createMailUserWithSms(
  service: Service,
  username: string,
  password: string,
  options: MailUserOptions & { headers?: Record<string, string> } = {},
): Promise<MailUser & { phone: string; smsCode: string }> {
  const user = await createMailUser(service, username, password, options);
  const token = await service.accessToken(username, password);
  const phone = nextPhone();
  const headers = options.headers ?? {};
  await expectStatus(
    service.call('/mfa/sms/request/', { method: 'PUT', token, body: { phone_number: phone }, headers }),
    200,
  );
  const smsCode = service.twilio.lastCodeFor(`+${phone}`);
  await expectStatus(
    service.call('/mfa/sms/verify/', { method: 'PUT', token, body: { mfa_code: smsCode }, headers }),
    200,
  );
  service.clock.advance(31);
  return { ...user, phone, smsCode };
}
