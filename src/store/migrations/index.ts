import type { Migration } from 'kysely';
import * as core from './2026_11_23_0900_core.js';
import * as backupCodesThrottleAudit from './2026_11_23_1500_backup_codes_throttle_audit.js';
import * as hardening from './2026_11_23_2100_hardening.js';
import * as mfaFactors from './2026_11_23_2200_mfa_factors.js';
import * as stepUp from './2026_11_23_2300_step_up.js';
import * as webhooks from './2026_11_23_2310_webhooks.js';
import * as smsFraud from './2026_11_23_2320_sms_fraud.js';
import * as webauthn from './2026_11_23_2340_webauthn.js';
import * as loginsInFlight from './2026_11_24_1400_logins_in_flight.js';
import * as userLookups from './2026_11_24_1500_user_lookups.js';
import * as hardeningThree from './2026_11_26_1000_hardening_three.js';
import * as openidConnect from './2026_11_26_1200_openid_connect.js';
import * as passkeysFirst from './2026_11_26_1400_passkeys_first.js';
import * as rememberedDevices from './2026_11_27_0900_remembered_devices.js';
import * as userEmail from './2026_11_27_1000_user_email.js';
import * as operators from './2026_11_27_1200_operators.js';
import * as userCounts from './2026_11_27_1300_user_counts.js';
import * as messageOutboxAndRecovery from './2026_11_27_1400_message_outbox_and_recovery.js';
import * as passwordReset from './2026_11_27_1430_password_reset.js';
import * as userEmailSearch from './2026_11_27_1500_user_email_search.js';
import * as pruning from './2026_11_27_1530_pruning.js';
import * as messageLimits from './2026_11_27_1600_message_limits.js';
import * as userLanguage from './2026_11_27_1700_user_language.js';
import * as expiryIndexes from './2026_11_27_1730_expiry_indexes.js';
import * as signInHours from './2026_11_28_1000_sign_in_hours.js';

/** Every migration, in order. Never edit one once merged: add a new one. */
export const migrations: Record<string, Migration> = {
  '2026_11_23_0900_core': core,
  '2026_11_23_1500_backup_codes_throttle_audit': backupCodesThrottleAudit,
  '2026_11_23_2100_hardening': hardening,
  '2026_11_23_2200_mfa_factors': mfaFactors,
  '2026_11_23_2300_step_up': stepUp,
  '2026_11_23_2310_webhooks': webhooks,
  '2026_11_23_2320_sms_fraud': smsFraud,
  '2026_11_23_2340_webauthn': webauthn,
  '2026_11_24_1400_logins_in_flight': loginsInFlight,
  '2026_11_24_1500_user_lookups': userLookups,
  '2026_11_26_1000_hardening_three': hardeningThree,
  '2026_11_26_1200_openid_connect': openidConnect,
  '2026_11_26_1400_passkeys_first': passkeysFirst,
  '2026_11_27_0900_remembered_devices': rememberedDevices,
  '2026_11_27_1000_user_email': userEmail,
  '2026_11_27_1200_operators': operators,
  '2026_11_27_1300_user_counts': userCounts,
  '2026_11_27_1400_message_outbox_and_recovery': messageOutboxAndRecovery,
  '2026_11_27_1500_user_email_search': userEmailSearch,
  '2026_11_27_1530_pruning': pruning,
  '2026_11_27_1430_password_reset': passwordReset,
  '2026_11_27_1600_message_limits': messageLimits,
  '2026_11_27_1700_user_language': userLanguage,
  '2026_11_27_1730_expiry_indexes': expiryIndexes,
  '2026_11_28_1000_sign_in_hours': signInHours,
};
