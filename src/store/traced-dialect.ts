import type { CompiledQuery, DatabaseConnection, Dialect, Driver } from 'kysely';
import { inSpan } from '../tracing.js';

/**
 * `dialect` with a span per statement (CONTRACT §22), used only when tracing is on: the SQL as
 * Kysely compiled it, with placeholders (its parameters, which hold hashes and names, stay out).
 */
export function tracedDialect(dialect: Dialect, system: 'sqlite' | 'postgresql'): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => tracedDriver(dialect.createDriver(), system),
  };
}

function tracedDriver(driver: Driver, system: string): Driver {
  // The driver is handed back the connections it made, not their traced wrappers.
  const rawOf = new WeakMap<DatabaseConnection, DatabaseConnection>();
  const traced = (connection: DatabaseConnection): DatabaseConnection => {
    const wrapper: DatabaseConnection = {
      executeQuery: (query) =>
        inSpan(spanName(query), { 'db.system.name': system, 'db.query.text': query.sql }, () =>
          connection.executeQuery(query),
        ),
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
    rawOf.set(wrapper, connection);
    return wrapper;
  };
  return new Proxy(driver, {
    get(target, property) {
      if (property === 'acquireConnection') return async () => traced(await target.acquireConnection());
      const value = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        value.apply(
          target,
          args.map((arg) => (typeof arg === 'object' && arg !== null && rawOf.get(arg as DatabaseConnection)) || arg),
        );
    },
  });
}

/** "SELECT", "INSERT" …: the statement's first word, as OpenTelemetry's database conventions name spans. */
function spanName(query: CompiledQuery): string {
  return /^\s*(\w+)/.exec(query.sql)?.[1]?.toUpperCase() ?? 'SQL';
}
