/**
 * The default symbolizer for stacks: kernel addresses from /proc/kallsyms. User addresses are not symbolized yet
 * (printed as addresses); `src/symbols/` (ELF, /proc/PID/maps, perf maps) plugs in here.
 */
import { readFileSync } from 'node:fs';
import type { FrameSymbol, StackFrameSymbolizer } from './stackformat.js';

let kallsyms: { addrs: BigUint64Array; names: string[] } | undefined;

function loadKallsyms(): { addrs: BigUint64Array; names: string[] } {
  if (kallsyms) return kallsyms;
  const entries: [bigint, string][] = [];
  for (const line of readFileSync('/proc/kallsyms', 'latin1').split('\n')) {
    const a = line.indexOf(' ');
    if (a < 0) continue;
    const type = line[a + 1];
    if (type !== 't' && type !== 'T' && type !== 'W' && type !== 'w') continue;
    const rest = line.slice(a + 3);
    const tab = rest.indexOf('\t');
    entries.push([BigInt(`0x${line.slice(0, a)}`), tab < 0 ? rest : rest.slice(0, tab)]);
  }
  entries.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  kallsyms = { addrs: BigUint64Array.from(entries.map((e) => e[0])), names: entries.map((e) => e[1]) };
  return kallsyms;
}

export function defaultSymbolizer(): StackFrameSymbolizer {
  return {
    kernel(ip: bigint): FrameSymbol | undefined {
      const { addrs, names } = loadKallsyms();
      let lo = 0;
      let hi = addrs.length - 1;
      if (hi < 0 || ip < addrs[0]!) return undefined;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (addrs[mid]! <= ip) lo = mid;
        else hi = mid - 1;
      }
      return { name: names[lo]!, offset: ip - addrs[lo]! };
    },
    user(): FrameSymbol | undefined {
      return undefined;
    },
  };
}
