/**
 * What the analyser hands the later passes besides the type tables: the typed units (one probe body per expanded
 * attach point) and the maps' key and value types. Declared here, below the analyser (`lang/passes/semantic.ts`), so
 * the resource pass and the code generator (`codegen/`) use them without importing the analyser.
 */
import type { Probe, Span } from './ast.js';
import type { BtType } from './bt-int-types.js';
import type { ExpandedProbe } from './probe.js';
import type { SType } from './types.js';

/** A map after analysis: its key element types (`[]` for `@x`) and value type. */
export interface MapSymbol {
  name: string;
  keyTypes: SType[];
  valueType: SType;
  /** The key types as bpftrace types them (literals narrow: `@m[1]` has an int8 key), for messages. */
  btKeyTypes?: BtType[];
  /** First place it was assigned, for messages. */
  pos: Span;
}

/** One probe body compiled for one expanded attach point. */
export interface ProbeUnit {
  probe: Probe;
  expanded: ExpandedProbe;
  /** Index of the AST probe in the program (for naming). */
  probeIndex: number;
}
