/**
 * `--heatmap FILE` for the tools (issue 14): the framework adds the option to every tool whose {@link ToolDef}
 * declares a `heatmap` (hidden from `-h`, which stays bcc's), collects what the tool emits while it runs, and
 * writes the SVG when the run ends (count reached, duration, `--exec` command exited, Ctrl-C/SIGTERM).
 *
 * - Histogram tools (`kind: 'hist'`: biolatency, runqlat, cpudist, funclatency, hardirqs -d, softirqs -d) emit one
 *   {@link HistInterval} per interval; each becomes one column (all sections of the interval, e.g. the disks of
 *   `-D`, summed), each log2 bucket one row (bottom: the smallest bucket any interval counted; top: the largest;
 *   the buckets between are drawn even when empty), labelled with its range and unit (`64-127 usecs`): the y axis
 *   is logarithmic, as the printed histogram. Drawn by `renderHistHeatMap` (flame/heatmap.ts): trace2heatmap.pl's
 *   look. Bound: the last {@link MAX_HEATMAP_COLUMNS} intervals are kept (older ones are dropped, the time axis
 *   says where the kept ones start); each column holds at most 65 counts.
 * - Event tools (`kind: 'events'`: biosnoop, ext4slower) give a (time, latency) point per row, in microseconds;
 *   they go through `bpfscope heatmap`'s renderer (`--unitstime=us --unitslabel=us`, 50 rows up to the largest
 *   latency), which here also draws the last column and the top row (trace2heatmap.pl leaves them out). Bound: the first {@link MAX_HEATMAP_EVENTS} events (16 bytes each); later ones are counted and
 *   reported on stderr, not drawn.
 *
 * The file is created (truncated) when the run starts, so an unwritable path fails before anything is attached;
 * a run that gathered nothing removes it and says so on stderr.
 */
import { closeSync, openSync, unlinkSync, writeFileSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { HeatMapError, HeatMapInput, MAX_COLUMNS, renderHeatMap, renderHistHeatMap } from '../../flame/heatmap.js';
import { LOG2_SLOTS, type Log2Bucket } from './hist.js';

/** Intervals a histogram heat map keeps (the latest ones): trace2heatmap.pl's column limit. */
export const MAX_HEATMAP_COLUMNS = MAX_COLUMNS;
/** Events an event heat map keeps (the first ones). */
export const MAX_HEATMAP_EVENTS = 4_000_000;

/**
 * One interval of a histogram tool (runTool's interval, `--json`'s object): the per-interval tick of the
 * framework. Tools extend it with their own fields (a section name per histogram, `-e` totals, ...).
 */
export interface HistInterval {
  /** Wall-clock time at the end of the interval, HH:MM:SS (bcc's -T line). */
  time: string;
  /** Unit of the buckets' bounds: `usecs`, `msecs` or `nsecs`. */
  unit: string;
  /** The interval's log2 histograms: one, or one per section (disk, process, function, irq), in print order. */
  histograms: { buckets: Log2Bucket[] }[];
}

/** What a tool's `--heatmap` draws (see the module comment). */
export type HeatMapSpec<R> =
  | {
      kind: 'hist';
      title: string;
      /** Why `--heatmap` cannot be used with these options (e.g. hardirqs without -d), or null. */
      refuse?(args: Readonly<Record<string, unknown>>): string | null;
    }
  | {
      kind: 'events';
      title: string;
      /** The point of one row, µs since the first event and µs of latency; null leaves the row out. */
      point(row: R): { timeUs: number; latencyUs: number } | null;
    };

/** Collects a run's results and writes the heat map (see the module comment). */
export class HeatMapWriter {
  private readonly columns: Map<number, bigint>[] = [];
  private dropped = 0;
  private unit = '';
  private readonly input = new HeatMapInput();
  private lostEvents = 0;
  private intervalSec: number | null = null;
  private readonly startMs = Date.now();

  /** Creates (truncates) `path`. @throws BpfscopeError when it cannot be written */
  constructor(
    readonly path: string,
    private readonly spec: HeatMapSpec<unknown>,
  ) {
    try {
      closeSync(openSync(path, 'w'));
    } catch (e) {
      throw new BpfscopeError(`--heatmap ${path}: ${(e as Error).message}`);
    }
  }

  /** The run's interval in seconds (null: one interval, the whole run). */
  setInterval(seconds: number | null): void {
    this.intervalSec = seconds;
  }

  /** One result of the tool (a {@link HistInterval} for `hist` tools, a row for `events` tools). */
  add(value: unknown): void {
    if (this.spec.kind === 'events') {
      const p = this.spec.point(value);
      if (!p) return;
      if (this.input.count >= MAX_HEATMAP_EVENTS) {
        this.lostEvents++;
        return;
      }
      this.input.line(`${Math.round(p.timeUs)} ${Math.round(p.latencyUs)}`);
      return;
    }
    const i = value as HistInterval;
    this.unit = i.unit;
    const col = new Map<number, bigint>();
    for (const h of i.histograms) {
      h.buckets.forEach((b, k) => {
        if (b.count > 0n) col.set(k + 1, (col.get(k + 1) ?? 0n) + b.count);
      });
    }
    this.columns.push(col);
    if (this.columns.length > MAX_HEATMAP_COLUMNS) {
      this.columns.shift();
      this.dropped++;
    }
  }

  /** The SVG of what was collected, or null when there is nothing to draw. */
  render(): string | null {
    if (this.spec.kind === 'events') {
      if (this.input.count === 0) return null;
      return renderHeatMap(this.input, { title: this.spec.title, unitsTime: 'us', unitsLabel: 'us', drawAll: true })
        .svg;
    }
    let lo = LOG2_SLOTS;
    let hi = 0;
    for (const c of this.columns) {
      for (const s of c.keys()) {
        lo = Math.min(lo, s);
        hi = Math.max(hi, s);
      }
    }
    if (hi === 0) return null;
    const rows: string[] = [];
    for (let s = lo; s <= hi; s++)
      rows.push(`${s === 1 ? 0n : 1n << BigInt(s - 1)}-${(1n << BigInt(s)) - 1n} ${this.unit}`);
    const columns = this.columns.map((c) => {
      const counts = new Array<number>(rows.length).fill(0);
      for (const [s, n] of c) counts[s - lo] = Number(n);
      return counts;
    });
    const seconds = this.intervalSec ?? Math.max(1, Math.ceil((Date.now() - this.startMs) / 1000));
    return renderHistHeatMap({ rows, columns, firstColumn: this.dropped }, { title: this.spec.title, stepSec: seconds })
      .svg;
  }

  /**
   * Writes the heat map (at the end of the run); with nothing to draw, removes the file. Returns the note for
   * stderr (what was dropped or why nothing was written), or ''.
   */
  finish(): string {
    let svg: string | null;
    try {
      svg = this.render();
    } catch (e) {
      if (!(e instanceof HeatMapError)) throw e;
      svg = null;
      this.unlink();
      return `--heatmap ${this.path}: ${e.message}; not written\n`;
    }
    if (svg === null) {
      this.unlink();
      return `--heatmap ${this.path}: nothing to draw (no ${this.spec.kind === 'events' ? 'events' : 'histogram counts'}); not written\n`;
    }
    writeFileSync(this.path, svg);
    if (this.dropped > 0) {
      return `--heatmap ${this.path}: the first ${this.dropped} intervals were dropped (it keeps the last ${MAX_HEATMAP_COLUMNS})\n`;
    }
    if (this.lostEvents > 0) {
      return `--heatmap ${this.path}: ${this.lostEvents} events after the first ${MAX_HEATMAP_EVENTS} were not drawn\n`;
    }
    return '';
  }

  private unlink(): void {
    try {
      unlinkSync(this.path);
    } catch {
      // already gone
    }
  }
}
