// "Forgot password" (CONTRACT §20), as every page offers it: ask for a link by username or address,
// and (the reset page) set a new password with the link's token. Neither signs anyone in.
import { ApiError, readAnswer } from './api-error.js';

const RESET_PATH = 'mfa/password/reset/';

/** Something that looks like an address is asked for as one; anything else as a username. */
const ADDRESS = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;

/** Asks for a link for the account `name` names; the answer is the same whether or not one does. */
export async function askForResetLink(base: URL, name: string): Promise<void> {
  await send(base, 'POST', ADDRESS.test(name) ? { email: name } : { username: name });
}

/** Sets the new password with the link's token; every sign-in of the account ends. */
export async function setPasswordWithLink(base: URL, token: string, newPassword: string): Promise<void> {
  await send(base, 'PUT', { token, new_password: newPassword });
}

async function send(base: URL, method: string, body: unknown): Promise<void> {
  let response: Response;
  try {
    response = await fetch(new URL(RESET_PATH, base), {
      method,
      cache: 'no-store',
      credentials: 'omit',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'the service could not be reached');
  }
  await readAnswer(response);
}
