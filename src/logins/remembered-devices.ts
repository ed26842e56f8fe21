import { randomUUID } from 'node:crypto';
import Bowser from 'bowser';
import type { Clock } from '../clock.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import type { RememberedDevice } from '../store/remembered-devices.js';
import type { Store } from '../store/store.js';

export type { RememberedDevice } from '../store/remembered-devices.js';

const DAY_MS = 86_400_000;

/** A new device's cookie, for the route to set. */
export interface NewDevice {
  secret: string;
  expiresAt: Date;
}

/**
 * "Remember this device" (CONTRACT §19): after a second factor at the hosted sign-in, a browser may
 * skip that step for as many days as the app allows. The browser keeps a random token (a cookie);
 * the service keeps its hash, bound to the user and to their session generation, so it counts for
 * no one else and CONTRACT §14's changes (factors added or removed, MFA off, a reset, a new
 * password) forget every device at once.
 */
export function createRememberedDevices({ store, clock }: { store: Store; clock: Clock }) {
  async function remember(
    user: { id: string; sessionGeneration: number },
    amr: string[],
    userAgent: string | undefined,
    days: number,
  ): Promise<NewDevice> {
    const now = clock.now();
    const secret = randomToken(32);
    const expiresAt = new Date(now.getTime() + days * DAY_MS);
    await store.rememberedDevices.insertRememberedDevice({
      id: randomUUID(),
      tokenHash: sha256(secret),
      userId: user.id,
      sessionGeneration: user.sessionGeneration,
      amr,
      browser: describeBrowser(userAgent),
      createdAt: now,
      lastUsedAt: now,
      expiresAt,
    });
    return { secret, expiresAt };
  }

  /**
   * The user's device the cookie names, remembered at most `days` ago (the app asking may allow
   * fewer days than the one that remembered it); undefined otherwise. A use is recorded.
   */
  async function recognise(
    secret: string | undefined,
    userId: string,
    days: number,
  ): Promise<RememberedDevice | undefined> {
    if (!secret || days <= 0) return undefined;
    const now = clock.now();
    const device = await store.rememberedDevices.findLiveRememberedDevice(sha256(secret), userId, now);
    if (!device || device.createdAt.getTime() + days * DAY_MS <= now.getTime()) return undefined;
    await store.rememberedDevices.touchRememberedDevice(device.id, now);
    return device;
  }

  function list(userId: string): Promise<RememberedDevice[]> {
    return store.rememberedDevices.listRememberedDevices(userId, clock.now());
  }

  function forget(userId: string, id: string): Promise<boolean> {
    return store.rememberedDevices.deleteRememberedDevice(id, userId);
  }

  return { remember, recognise, list, forget };
}

export type RememberedDevices = ReturnType<typeof createRememberedDevices>;

/** "Chrome on Linux", from a User-Agent; "A browser" when it names none. */
export function describeBrowser(userAgent: string | undefined): string {
  if (!userAgent) return 'A browser';
  const { browser, os } = Bowser.parse(userAgent.slice(0, 512));
  const name = browser.name || 'A browser';
  return os.name ? `${name} on ${os.name}` : name;
}
