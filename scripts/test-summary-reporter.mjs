// A node:test reporter that writes one JSON line for scripts/run-tests.mjs: the run's counts (the
// runner's own closing diagnostics: "tests 858", "pass 853", …) and the name and file of each
// failed test, so that `npm test` can end with one summary of both passes.
export default async function* summary(source) {
  const counts = {};
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:diagnostic' && event.data.nesting === 0) {
      const [key, value] = event.data.message.split(' ');
      if (/^\d+(\.\d+)?$/.test(value ?? '')) counts[key] = Number(value);
    }
    if (event.type === 'test:fail' && event.data.details?.type !== 'suite') {
      failures.push({ name: event.data.name, file: event.data.file });
    }
  }
  yield `${JSON.stringify({ counts, failures })}\n`;
}
