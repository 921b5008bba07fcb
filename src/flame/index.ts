/**
 * Flame graph toolkit, for tools and embedders (e.g. `bpfscope profile --svg`):
 * - collapsers turn profiler text into folded stacks ("root;...;leaf count" lines): `PerfCollapser` (perf script,
 *   as stackcollapse-perf.pl), `BpftraceCollapser` (bpftrace/bpfscope stack maps), both `StackCollapser`s;
 * - `renderFlameGraph(lines, options)` turns folded lines into an interactive SVG (flamegraph.pl's options);
 * - `diffFolded` pairs two profiles for differential flame graphs (difffolded.pl).
 * See docs/tools/flamegraph.md and docs/tools/stackcollapse.md.
 */
export { BpftraceCollapser } from './collapse/bpftrace.js';
export { collapseText, type StackCollapser, type WarnFn } from './collapse/collapser.js';
export { type PerfCollapseOptions, PerfCollapser } from './collapse/perf.js';
export { type ColorMode, frameColor, PALETTES, type Palette } from './color.js';
export {
  DEFAULT_OPTIONS,
  FlameGraphOptionError,
  type FlameGraphOptions,
  type FlameGraphResult,
  parseNameAttr,
  renderFlameGraph,
} from './flamegraph.js';
export { type DiffFoldedOptions, diffFolded, type FoldedLine, parseFoldedLine } from './folded.js';
