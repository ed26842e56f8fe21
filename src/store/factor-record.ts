import type { Selectable } from 'kysely';
import type { FactorStatus, MfaFactorTable } from './database.js';

export interface Factor {
  id: string;
  userId: string;
  type: string;
  name: string;
  isDefault: boolean;
  status: FactorStatus;
  createdAt: Date;
  verifiedAt?: Date;
  lastUsedAt?: Date;
  phoneNumber?: string;
  sealedSecret?: string;
  data?: string;
  counter?: number;
}

/**
 * Every column of `mfa_factor`, named: a statement that selects `*` is not prepared on
 * PostgreSQL (store/database.ts), and the factors are read on every login and MFA call.
 */
export const FACTOR_COLUMNS = [
  'id',
  'user_id',
  'type',
  'name',
  'is_default',
  'status',
  'created_at',
  'verified_at',
  'last_used_at',
  'phone_number',
  'sealed_secret',
  'data',
  'counter',
] as const satisfies readonly (keyof MfaFactorTable)[];

/** The columns a factor record is made of. */
export type FactorRow = Pick<Selectable<MfaFactorTable>, (typeof FACTOR_COLUMNS)[number]>;

/** A row of `mfa_factor` as a record. */
export function toFactor(row: FactorRow): Factor {
  return {
    id: row.id,
    userId: row.user_id,
    type: row.type,
    name: row.name,
    isDefault: row.is_default === 1,
    status: row.status,
    createdAt: new Date(row.created_at),
    verifiedAt: row.verified_at ? new Date(row.verified_at) : undefined,
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : undefined,
    phoneNumber: row.phone_number ?? undefined,
    sealedSecret: row.sealed_secret ?? undefined,
    data: row.data ?? undefined,
    counter: row.counter ?? undefined,
  };
}
