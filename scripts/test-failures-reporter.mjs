// A node:test reporter (https://nodejs.org/api/test.html#custom-reporters) that writes one JSON line per failed
// test: { file, name, nesting, failureType, message }. scripts/run-tests.mjs reads it to print the failures again at
// the very end of a run (CI keeps only the tail of the output) and to know which files to run a second time.
export default async function* failures(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { file, name, nesting, details } = event.data;
    const error = details?.error;
    const message = String(error?.cause?.message ?? error?.message ?? '')
      .split('\n')
      .slice(0, 6)
      .join('\n');
    yield JSON.stringify({ file, name, nesting, failureType: error?.failureType, message }) + '\n';
  }
}
