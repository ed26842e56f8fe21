import type { FastifyInstance } from 'fastify';

let turnEnd: Promise<void> | undefined;

/**
 * Resolves once the event loop has taken in this turn's input (setImmediate): the same promise for
 * every answer of the turn.
 */
function afterThisTurnsInput(): Promise<void> {
  turnEnd ??= new Promise((resolve) =>
    setImmediate(() => {
      turnEnd = undefined;
      resolve();
    }),
  );
  return turnEnd;
}

/**
 * Every answer is written once the turn's input has been read, with the other answers of that
 * turn, instead of as soon as it is ready. An answer ready at once (a SQLite read, a refused
 * token) otherwise went out alone, and a client on the same host (a local proxy, the bench's load
 * generator) was woken once per answer: on a host where waking another process is dear, that was
 * half the CPU of `GET /mfa/` on SQLite and of a forged token's 401 (docs/PERFORMANCE.md). The
 * wait is the rest of the turn, not a timer: a lone request is answered in the same turn.
 */
export function writeAnswersPerTurn(app: FastifyInstance): void {
  // Async, not `done` from a `.then`: Fastify then writes the answer inside its own try, so a
  // failure there (a header it refuses) is still answered 500 instead of rejecting unhandled.
  app.addHook('onSend', async (_request, _reply, payload) => {
    await afterThisTurnsInput();
    return payload;
  });
}
