// d3-flame-graph and d3-selection ship no types: the parts the page uses.
declare module 'd3-flame-graph' {
  export interface FlameGraph {
    (selection: unknown): void;
    width(w: number): FlameGraph;
    cellHeight(h: number): FlameGraph;
    transitionDuration(ms: number): FlameGraph;
    minFrameSize(px: number): FlameGraph;
    sort(on: boolean): FlameGraph;
    title(t: string): FlameGraph;
    computeDelta(on: boolean): FlameGraph;
    setColorMapper(f: unknown): FlameGraph;
    label(f: unknown): FlameGraph;
    setSearchHandler(f: (results: unknown[], sum: number, total: number) => void): FlameGraph;
    search(term: string): void;
    clear(): void;
    resetZoom(): void;
    destroy?(): void;
  }
  export default function flamegraph(): FlameGraph;
  export const colorMapper: { differentialColorMapper: unknown };
}
declare module 'd3-selection' {
  export function select(el: Element): { datum(d: unknown): { call(f: unknown): void } };
}
declare module '*.css';
