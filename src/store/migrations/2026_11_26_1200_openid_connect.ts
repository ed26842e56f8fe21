import type { Kysely } from 'kysely';

// Issue 27: OpenID Connect. Clients gain their browser-flow metadata; authorization codes, sign-ins
// in progress (interactions) and the browser's sign-in sessions get tables; a refresh-token family
// remembers the sign-in session it came from, so that logging out of it revokes the family.
export async function up(db: Kysely<any>): Promise<void> {
  const clientColumns: [string, string][] = [
    ['redirect_uris', '[]'],
    ['post_logout_redirect_uris', '[]'],
    ['token_endpoint_auth_method', 'client_secret_basic'],
    // Existing clients keep the default too: a client granted any scope it asked for was the
    // third review's finding, and an operator widens a client's scopes with PATCH.
    ['allowed_scopes', 'openid profile offline_access'],
    ['web_origins', '[]'],
    ['id_token_signed_response_alg', 'RS256'],
    ['mfa_policy', 'optional'],
  ];
  for (const [column, fallback] of clientColumns) {
    await db.schema
      .alterTable('oauth_client')
      .addColumn(column, 'text', (definition) => definition.notNull().defaultTo(fallback))
      .execute();
  }

  await db.schema
    .createTable('sign_in_session')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('secret_hash', 'text', (column) => column.notNull().unique())
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('amr', 'text', (column) => column.notNull())
    .addColumn('auth_time', 'bigint', (column) => column.notNull())
    .addColumn('session_generation', 'integer', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('last_used_at', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('ended_at', 'text')
    .execute();
  await db.schema.createIndex('sign_in_session_user').on('sign_in_session').column('user_id').execute();
  await db.schema.createIndex('sign_in_session_expiry').on('sign_in_session').column('expires_at').execute();

  await db.schema
    .createTable('authorization_interaction')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('browser_hash', 'text', (column) => column.notNull())
    .addColumn('csrf_hash', 'text', (column) => column.notNull())
    .addColumn('client_id', 'text', (column) => column.notNull().references('oauth_client.id').onDelete('cascade'))
    .addColumn('request', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.references('user.id').onDelete('cascade'))
    .addColumn('auth_time', 'bigint')
    .addColumn('amr', 'text')
    .addColumn('session_generation', 'integer')
    .addColumn('login_id', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema
    .createIndex('authorization_interaction_expiry')
    .on('authorization_interaction')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('authorization_code')
    .addColumn('code_hash', 'text', (column) => column.primaryKey())
    .addColumn('client_id', 'text', (column) => column.notNull().references('oauth_client.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull().references('user.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (column) => column.notNull())
    .addColumn('code_challenge', 'text', (column) => column.notNull())
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('nonce', 'text')
    .addColumn('amr', 'text', (column) => column.notNull())
    .addColumn('auth_time', 'bigint', (column) => column.notNull())
    .addColumn('sign_in_session_id', 'text', (column) => column.notNull())
    .addColumn('login_id', 'text', (column) => column.notNull())
    .addColumn('session_generation', 'integer', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('expires_at', 'text', (column) => column.notNull())
    .addColumn('used_at', 'text')
    .addColumn('replayed_at', 'text')
    .execute();
  await db.schema.createIndex('authorization_code_expiry').on('authorization_code').column('expires_at').execute();

  await db.schema.alterTable('refresh_token').addColumn('sign_in_session_id', 'text').execute();
  await db.schema
    .createIndex('refresh_token_sign_in_session')
    .on('refresh_token')
    .column('sign_in_session_id')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('refresh_token_sign_in_session').execute();
  await db.schema.alterTable('refresh_token').dropColumn('sign_in_session_id').execute();
  await db.schema.dropTable('authorization_code').execute();
  await db.schema.dropTable('authorization_interaction').execute();
  await db.schema.dropTable('sign_in_session').execute();
  for (const column of [
    'mfa_policy',
    'id_token_signed_response_alg',
    'web_origins',
    'allowed_scopes',
    'token_endpoint_auth_method',
    'post_logout_redirect_uris',
    'redirect_uris',
  ]) {
    await db.schema.alterTable('oauth_client').dropColumn(column).execute();
  }
}
