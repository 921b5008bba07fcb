// Stop a run from outside with an AbortSignal; close() is idempotent (docs/api.md, "Ending a run").
// Run as root: node dist/examples/api/abort.js
import { trace } from '../../src/index.js';

const ac = new AbortController();
const t = await trace('interval:ms:10 { printf("tick\\n"); }', { signal: ac.signal });
t.onExit((exit) => console.log(`run ended: ${exit.reason}`));
let ticks = 0;
for await (const ev of t.events()) {
  if (ev.kind === 'printf' && ++ticks === 3) ac.abort(); // stops and closes the run: the loop ends
}
await t.close(); // waits for the close the abort started
console.log(`saw ${ticks} ticks`);
