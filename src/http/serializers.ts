import SerializerSelector from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = SerializerSelector.SerializerFactory;
type Serializer = SerializerSelector.Serializer;

const buildFastifySerializer = SerializerSelector();

/**
 * Fastify's own serializer factory (fast-json-stringify, through @fastify/fast-json-stringify-compiler),
 * answering one serializer for one schema object. Fastify compiles a serializer for every status
 * code of every route, and again for the HEAD route it adds beside each GET: the same schemas
 * (ErrorBody under most routes' 400, 401, 404; each GET's answer for its HEAD) were compiled into
 * 427 functions for 71 distinct schemas, each holding its generated source: about 1 MB of heap
 * (docs/PERFORMANCE.md). A serializer depends only on its schema and the factory's options, which
 * are the same for every route that this factory's compiler serves.
 * Validators need no such thing: Ajv keeps one per schema object already.
 */
export const buildSharedSerializer: SerializerFactory = (externalSchemas, options) => {
  const compile = buildFastifySerializer(externalSchemas, options);
  const compiled = new WeakMap<object, Serializer>();
  return (route) => {
    const schema = route.schema;
    if (typeof schema !== 'object' || schema === null) return compile(route);
    let serialize = compiled.get(schema);
    if (serialize === undefined) {
      serialize = compile(route);
      compiled.set(schema, serialize);
    }
    return serialize;
  };
};
