import { createHash, createSign, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';

/**
 * A software WebAuthn authenticator for API-level tests: ES256 keys, "none" attestation, and a
 * signature counter, producing the RegistrationResponseJSON and AuthenticationResponseJSON a
 * browser would. (The browser tests use Chromium's own virtual authenticator instead.)
 */
export class SoftAuthenticator {
  readonly #credentials = new Map<string, { privateKey: KeyObject; counter: number; userHandle: string }>();

  /**
   * `counterStep`: how far the counter moves per assertion (0: an authenticator without a counter).
   * `model`: what it says of itself: its AAGUID, whether its passkeys are synced (backup eligible
   * and backed up) and discoverable (credProps.rk, as a browser reports it).
   */
  constructor(
    private readonly counterStep = 1,
    private readonly model: { aaguid?: string; isSynced?: boolean; isDiscoverable?: boolean } = {},
  ) {}

  /**
   * navigator.credentials.create() for these options, as seen from `origin`; `tamper` makes it
   * misbehave: no user verification (a tap without PIN or biometrics).
   */
  register(options: any, origin: string, tamper: { withoutUserVerification?: boolean } = {}): any {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const credentialId = randomBytes(16);
    const id = credentialId.toString('base64url');
    this.#credentials.set(id, { privateKey, counter: 0, userHandle: options.user.id });
    // COSE_Key (RFC 9053): kty EC2, alg ES256, crv P-256, x, y.
    const coseKey = cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x ?? '', 'base64url')],
        [-3, Buffer.from(jwk.y ?? '', 'base64url')],
      ]),
    );
    const lengthBytes = Buffer.alloc(2);
    lengthBytes.writeUInt16BE(credentialId.length);
    // User present, user verified (unless told otherwise), attested credential data; backup eligible
    // and backed up when synced.
    const flags = (tamper.withoutUserVerification ? 0x41 : 0x45) | (this.model.isSynced ? 0x18 : 0);
    const aaguid = Buffer.from(
      (this.model.aaguid ?? '00000000-0000-0000-0000-000000000000').replaceAll('-', ''),
      'hex',
    );
    const authData = Buffer.concat([
      authenticatorData(options.rp.id, flags, 0),
      aaguid,
      lengthBytes,
      credentialId,
      coseKey,
    ]);
    const attestationObject = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: clientData('webauthn.create', options.challenge, origin),
        attestationObject: attestationObject.toString('base64url'),
        transports: ['internal'],
      },
      clientExtensionResults:
        this.model.isDiscoverable === undefined ? {} : { credProps: { rk: this.model.isDiscoverable } },
      authenticatorAttachment: 'platform',
    };
  }

  /**
   * navigator.credentials.get() for these options, as seen from `origin`, with the first allowed
   * credential it holds. `tamper` makes it misbehave: another RP ID, no user verification (a tap
   * without PIN or biometrics), or another user handle (another account's, null, empty or none).
   */
  assert(
    options: any,
    origin: string,
    tamper: { rpId?: string; withoutUserVerification?: boolean; userHandle?: string | null } = {},
  ): any {
    const rpId = tamper.rpId ?? options.rpId;
    const allowed: string[] = (options.allowCredentials ?? []).map((credential: { id: string }) => credential.id);
    const id = allowed.find((candidate) => this.#credentials.has(candidate)) ?? [...this.#credentials.keys()][0];
    const credential = id === undefined ? undefined : this.#credentials.get(id);
    if (!id || !credential) throw new Error('the soft authenticator holds no allowed credential');
    credential.counter += this.counterStep;
    // User present (0x01), and user verified (0x04) unless told otherwise.
    const authData = authenticatorData(rpId, tamper.withoutUserVerification ? 0x01 : 0x05, credential.counter);
    const clientDataJSON = clientData('webauthn.get', options.challenge, origin);
    const signer = createSign('sha256');
    signer.update(
      Buffer.concat([authData, createHash('sha256').update(Buffer.from(clientDataJSON, 'base64url')).digest()]),
    );
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON,
        authenticatorData: authData.toString('base64url'),
        signature: signer.sign(credential.privateKey).toString('base64url'),
        // Given as undefined, the field is left out, as some clients do for none.
        userHandle: 'userHandle' in tamper ? tamper.userHandle : credential.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** Sets a credential's counter back, as a cloned authenticator would show. */
  rewind(by: number) {
    for (const credential of this.#credentials.values()) credential.counter -= by;
  }
}

function authenticatorData(rpId: string, flags: number, counter: number): Buffer {
  const signCount = Buffer.alloc(4);
  signCount.writeUInt32BE(counter);
  return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), signCount]);
}

function clientData(type: string, challenge: string, origin: string): string {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false })).toString('base64url');
}

/** The few CBOR (RFC 8949) items attestation needs: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, length: number) => {
    if (length < 24) return Buffer.from([(major << 5) | length]);
    if (length < 256) return Buffer.from([(major << 5) | 24, length]);
    const bytes = Buffer.alloc(3);
    bytes[0] = (major << 5) | 25;
    bytes.writeUInt16BE(length, 1);
    return bytes;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const text = Buffer.from(value);
    return Buffer.concat([head(3, text.length), text]);
  }
  if (value instanceof Map) {
    return Buffer.concat([head(5, value.size), ...[...value].flatMap(([key, item]) => [cbor(key), cbor(item)])]);
  }
  throw new Error(`no CBOR for ${String(value)}`);
}
