// Read a program's printf() output as typed values (docs/api.md, "Events").
// Run as root: node dist/examples/api/events.js   (installed: import { trace } from 'bpfscope')
import { trace } from '../../src/index.js';

await using t = await trace(
  'tracepoint:syscalls:sys_enter_openat /comm == "cat"/ { @opens[comm] = count(); printf("%d %s\\n", pid, str(args.filename)); }',
  { command: 'cat /etc/hostname' }, // traced from its first instruction; the run ends when it exits
);
for await (const ev of t.events()) {
  if (ev.kind !== 'printf') continue;
  const [pid, path] = ev.values; // pid: bigint, path: string
  if (path === '/etc/hostname') {
    console.log(`cat (pid ${typeof pid}) opened ${path}`);
    break; // leaves the loop only: the run goes on until cat exits or t is closed
  }
}
const opens = await t.map<string, bigint>('@opens');
console.log(`opens by cat: at least 1: ${(opens.get('cat') ?? 0n) >= 1n}`);
// `await using` closes t here: every probe detached, every BPF object closed
