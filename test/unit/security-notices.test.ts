import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatTime, NOTICE_KINDS, noticeFor } from '../../src/notices/security-notices.js';

// CONTRACT §20: which audit events are told to the user by email, and how a notice writes a time.

describe('security notices', () => {
  test('each notice comes from its audit events', () => {
    const mapping: [string, string, string][] = [
      ['mfa_enabled', 'succeeded', 'factor_added'],
      ['factor_added', 'succeeded', 'factor_added'],
      ['factor_removed', 'succeeded', 'factor_removed'],
      ['mfa_disabled', 'succeeded', 'mfa_disabled'],
      ['mfa_disabled', 'reset_by_operator', 'mfa_disabled'],
      ['backup_codes_regenerated', 'succeeded', 'backup_codes_created'],
      ['backup_code_used', 'succeeded', 'backup_code_used'],
      ['password_changed', 'succeeded', 'password_changed'],
      ['password_changed', 'set_by_operator', 'password_changed'],
      ['login', 'throttled', 'sign_in_throttled'],
      ['mfa_throttled', 'refused', 'sign_in_throttled'],
      ['recovery_started', 'succeeded', 'recovery_started'],
      ['recovery_cancelled', 'by_user', 'recovery_cancelled'],
      ['recovery_cancelled', 'by_sign_in', 'recovery_cancelled'],
      ['recovery_completed', 'succeeded', 'recovery_completed'],
    ];
    for (const [type, outcome, kind] of mapping) {
      assert.equal(noticeFor(type, outcome, { limit: 'user' }), kind, `${type}:${outcome}`);
    }
    assert.deepEqual(
      [...new Set(mapping.map(([, , kind]) => kind))].sort(),
      [...NOTICE_KINDS].sort(),
      'every notice has a source',
    );
  });

  test('attempts that changed nothing, and changes told otherwise, are not notices', () => {
    for (const [type, outcome] of [
      ['login', 'succeeded'],
      ['login', 'failed'],
      ['backup_code_used', 'wrong'],
      ['email_code_check', 'wrong'],
      ['factor_made_default', 'succeeded'],
      // A recovery's removal of the factors is told once, as the recovery's completion.
      ['mfa_disabled', 'recovered'],
    ]) {
      assert.equal(noticeFor(type ?? '', outcome ?? ''), undefined, `${type}:${outcome}`);
    }
    // A client address blocked is not the owner's news, whatever username it tried.
    assert.equal(noticeFor('login', 'throttled', { limit: 'address' }), undefined);
  });

  test('times are written in UTC, in the words of the language', () => {
    const at = new Date('2026-11-27T14:05:00.000Z');
    assert.match(formatTime('en', at), /^November 27, 2026 at 2:05\sPM UTC$/);
    assert.match(formatTime('de', at), /^27\. November 2026 um 14:05 UTC$/);
    assert.match(formatTime('fr', at), /^27 novembre 2026 à 14:05 UTC$/);
  });
});
