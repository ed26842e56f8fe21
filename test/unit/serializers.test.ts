import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { buildSharedSerializer } from '../../src/http/serializers.js';

const ErrorBody = {
  type: 'object',
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
} as const;
const User = { type: 'object', properties: { id: { type: 'string' } } } as const;

describe('buildSharedSerializer', () => {
  test('one serializer for one schema object, whatever the route and status; another for another schema', () => {
    const compile = buildSharedSerializer(undefined, {});
    const first = compile({ schema: ErrorBody, method: 'GET', url: '/a', httpStatus: '404' });
    assert.equal(compile({ schema: ErrorBody, method: 'POST', url: '/b', httpStatus: '400' }), first);
    const user = compile({ schema: User, method: 'GET', url: '/a', httpStatus: '200' });
    assert.notEqual(user, first);
    assert.equal(user({ id: 'u1', password: 'x' }), '{"id":"u1"}');
  });

  test('in Fastify, routes sharing a schema, and the HEAD route beside a GET, answer as before', async () => {
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: buildSharedSerializer } } });
    const schema = { response: { 200: User, 404: ErrorBody } };
    app.get('/users/:id', { schema }, async (request, reply) =>
      (request.params as { id: string }).id === 'u1'
        ? { id: 'u1', password: 'kept out' }
        : reply.code(404).send({ error: 'not_found', error_description: 'no such user', stack: 'kept out' }),
    );
    app.post('/users/:id', { schema }, async (_request, reply) =>
      reply.code(404).send({ error: 'not_found', error_description: 'no such user', stack: 'kept out' }),
    );
    const found = await app.inject({ method: 'GET', url: '/users/u1' });
    assert.equal(found.body, '{"id":"u1"}');
    const head = await app.inject({ method: 'HEAD', url: '/users/u1' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers['content-length'], String(found.body.length));
    for (const method of ['GET', 'POST'] as const) {
      const missing = await app.inject({ method, url: '/users/u2' });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.body, '{"error":"not_found","error_description":"no such user"}');
    }
    await app.close();
  });
});
