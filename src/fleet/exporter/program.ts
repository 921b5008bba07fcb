/**
 * The one module between the exporter and bpfscope's runtime: runs a config's program through the typed public
 * API (`trace()`, docs/api.md) and reads its maps as lists of (key elements, value). Everything else in
 * fleet/exporter/ sees only this interface.
 */
import { type MapValue, trace, type TraceHandle, type TraceValue } from '../../api/index.js';
import { readSessionRecords } from '../../runtime/registry.js';
import type { PreparedProgram } from './check.js';

/** One map entry: the key's elements in order (none for a scalar map) and the value. */
export interface MapEntry {
  elements: readonly TraceValue[];
  value: MapValue;
}

export interface RunningProgram {
  /** The entries of map `name` (without `@`), read now. */
  readMap(name: string, keyCount: number): Promise<MapEntry[]>;
  /** Map names of the program (without `@`). */
  mapNames(): Promise<string[]>;
  /** Ids of the program's BPF programs (from the session registry, as `bpfscope ps` finds them). */
  programIds(): number[];
  /** Resolves when the program ends by itself (exit()). */
  readonly exited: Promise<unknown>;
  close(): Promise<void>;
}

/** Compile, load and attach `p` (resolves once every probe is live). Throws as trace() does. */
export async function startProgram(p: PreparedProgram, opts: { unsafe?: boolean } = {}): Promise<RunningProgram> {
  const t: TraceHandle = await trace(p.text, { sourceName: p.sourceName, ...(opts.unsafe ? { unsafe: true } : {}) });
  let ids: number[] | undefined;
  return {
    exited: t.exited,
    async readMap(name, keyCount) {
      const m = await t.map(`@${name}`);
      const out: MapEntry[] = [];
      for (const [k, v] of m) {
        const elements = keyCount === 0 ? [] : keyCount === 1 ? [k] : (k as readonly TraceValue[]);
        out.push({ elements, value: v });
      }
      return out;
    },
    async mapNames() {
      return [...(await t.maps()).keys()].map((n) => n.slice(1));
    },
    programIds() {
      if (ids === undefined) {
        const me = readSessionRecords().find((r) => r.pid === process.pid);
        const s = me?.sessions.find((x) => x.source === p.sourceName && x.program === p.text);
        ids = s ? [...s.progIds] : [];
      }
      return ids;
    },
    close: () => t.close(),
  };
}
