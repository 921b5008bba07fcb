/**
 * What each record of the ring buffer does (codegen/plan.ts AsyncAction): printf() text (or the typed API's
 * {@link PrintfHook}), errorf()/warnf() diagnostics, system() and cat() output, exit(), print(@map), clear()/zero(),
 * time(), join() and print(value). A {@link Session} owns one {@link RecordDispatcher} and feeds it every record it
 * reads; what the dispatcher needs of the session (its maps, stop()) comes through {@link RecordSession}.
 */
import { readFileSync, writeSync } from 'node:fs';
import { childProcess } from '../builtins.js';
import type { BpfMap } from '../bpf/map.js';
import type { CompiledProgram, MapPlan } from '../codegen/plan.js';
import { AsyncAction, JOIN_ARG_SIZE, JOIN_MAX_ARGS } from '../codegen/plan.js';
import { strerror as cStrerror } from '../kernel/ffi.js';
import { formatDiagnostic, type SourceFile } from '../lang/diagnostics.js';
import { type DecodeContext, decodeValue } from './decode.js';
import type { Output } from './output/index.js';
import type { MapDump, Value } from './output/model.js';
import { compileIntPrintf, compilePrintf, renderPrintf } from './output/printf.js';
import { formatTimeBuiltin } from './output/strftime.js';

/** system(): run the command through /bin/sh and return what it printed (bpftrace prints it in order). */
function runCommand(cmd: string): string {
  try {
    return childProcess().execSync(cmd, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? '');
  }
}

/**
 * cat(): at most `maxBytes` of a file's contents, or bpftrace's error text
 * (`ERROR: failed to open file 'PATH' (No such file or directory)`, tests/runtime/builtin "cat \"no such file\"").
 */
function readForCat(path: string, maxBytes: number): string {
  try {
    return readFileSync(path, 'latin1').slice(0, maxBytes);
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).errno;
    const why = errno !== undefined ? cStrerror(Math.abs(errno)) : (e as Error).message;
    return `ERROR: failed to open file '${path}' (${why})\n`;
  }
}

/**
 * Receives printf() records undecoded or decoded, instead of the text output (the typed API's event stream).
 * `raw` is tried first with the record's arguments at `buf[off..]` (laid out per `compiled.printfs[id]`); when it
 * returns false the arguments are decoded into the output model and passed to `values`.
 */
export interface PrintfHook {
  raw(id: number, buf: Buffer, off: number): boolean;
  values(id: number, args: Value[]): void;
  /** Records the next background read of the ring buffer may deliver at most (RingBufOptions.batchLimit). */
  batchLimit?(): number;
}

/** What a {@link RecordDispatcher} needs of its session: the maps records name by index, and stopping the run. */
export interface RecordSession {
  /** The plan of the map with index `index` (a record's id for print/clear/zero). */
  mapPlan(index: number): MapPlan;
  /** The kernel map of `plan`. */
  mapFor(plan: MapPlan): BpfMap;
  /** Read a whole map into the output model (print(@map); `zeroScalar`: see Session.dumpMap). */
  dumpMap(plan: MapPlan, opts: { zeroScalar?: boolean }): MapDump;
  /** Delete every entry of a map (clear(@map)). */
  clearMap(plan: MapPlan): void;
  /** End the run (exit()). */
  stop(): void;
}

/** The session options a {@link RecordDispatcher} reads (see SessionOptions). */
export interface RecordOptions {
  output: Output;
  source?: SourceFile | undefined;
  noWarnings?: boolean | undefined;
  printfHook?: PrintfHook | undefined;
}

/**
 * Turns ring buffer records into output. Records can be dropped ({@link dropping}: bench runs) or held back
 * ({@link collecting}: test runs, replayed through {@link onRecord}); after an exit() record, event records are dropped
 * until the session clears {@link afterExit} (it does before END runs).
 */
export class RecordDispatcher {
  /** An exit() record was read: later event records are dropped until END runs (bpftrace stops reading then). */
  afterExit = false;
  /** Set while bench runs' records are read: they are dropped. */
  private discarding = false;
  /** Set while a test probe's records are read: they are kept here (copies), to be shown if the test fails. */
  private collected: Buffer[] | null = null;
  private readonly printfs: ReturnType<typeof compilePrintf>[];
  /** Per printf id: the integer-only fast renderer (see compileIntPrintf), or null. */
  private readonly intPrintfs: ReturnType<typeof compileIntPrintf>[];
  /** Run-time warnings printed at most once (PrintfPlan.once) that were printed. */
  private readonly warnedOnce = new Set<number>();

  /** `valueCtx` decodes printf and print() values. */
  constructor(
    private readonly compiled: CompiledProgram,
    private readonly session: RecordSession,
    private readonly opts: RecordOptions,
    private readonly valueCtx: DecodeContext,
  ) {
    this.printfs = compiled.printfs.map((p) => compilePrintf(p.format));
    this.intPrintfs = compiled.printfs.map((p, i) => compileIntPrintf(this.printfs[i]!, p.argTypes, p.offsets));
  }

  /** Runs `read` with every record it delivers dropped. */
  dropping(read: () => void): void {
    this.discarding = true;
    try {
      read();
    } finally {
      this.discarding = false;
    }
  }

  /**
   * Runs `read` with every record it delivers kept (copied) instead of handled, and returns them (also when `read`
   * throws, then they are lost with the exception).
   */
  collecting(read: () => void): Buffer[] {
    const records: Buffer[] = [];
    this.collected = records;
    try {
      read();
    } finally {
      this.collected = null;
    }
    return records;
  }

  /** A ring buffer record at `buf[off..off+len)`: integer-only printfs directly, the rest through onRecord. */
  onRawRecord(buf: Buffer, off: number, len: number): void {
    if (this.afterExit || this.discarding) return;
    if (this.collected) {
      this.collected.push(Buffer.from(buf.subarray(off, off + len)));
      return;
    }
    if (len >= 8 && buf.readUInt32LE(off) === AsyncAction.PRINTF) {
      if (this.opts.printfHook?.raw(buf.readUInt32LE(off + 4), buf, off + 8)) return;
      const text = this.intPrintfs[buf.readUInt32LE(off + 4)]?.(buf, off + 8);
      if (text !== undefined && text !== null) {
        this.opts.output.printf(text);
        return;
      }
    }
    this.onRecord(buf.subarray(off, off + len));
  }

  /** One record (a view or a copy), handled by its action; what it prints goes to `output`. */
  onRecord(data: Buffer): void {
    if (data.length < 8 || this.discarding) return;
    if (this.collected) {
      this.collected.push(Buffer.from(data));
      return;
    }
    const action = data.readUInt32LE(0);
    const id = data.readUInt32LE(4);
    const out = this.opts.output;
    switch (action) {
      case AsyncAction.PRINTF: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        if (this.opts.printfHook) this.opts.printfHook.values(id, args);
        else out.printf(renderPrintf(this.printfs[id]!, args));
        return;
      }
      case AsyncAction.ERRORF:
      case AsyncAction.WARNF: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        const severity = action === AsyncAction.ERRORF ? 'error' : 'warning';
        if (severity === 'warning' && this.opts.noWarnings) return;
        if (p.once) {
          if (this.warnedOnce.has(id)) return;
          this.warnedOnce.add(id);
        }
        const message = renderPrintf(this.printfs[id]!, args);
        const source = this.opts.source ?? { name: 'stdin', text: '' };
        out.flush();
        writeSync(2, `${formatDiagnostic({ severity, message, ...(p.pos ? { pos: p.pos } : {}) }, source)}\n`);
        return;
      }
      case AsyncAction.SYSTEM:
      case AsyncAction.CAT: {
        const p = this.compiled.printfs[id]!;
        const args: Value[] = p.argTypes.map((t, i) => decodeValue(data, 8 + p.offsets[i]!, t, this.valueCtx));
        const text = renderPrintf(this.printfs[id]!, args);
        out.flush();
        if (action === AsyncAction.SYSTEM) out.syscall(runCommand(text));
        else out.cat(readForCat(text, this.compiled.maxCatBytes ?? 10240));
        return;
      }
      case AsyncAction.EXIT:
        // as bpftrace: what other probes sent after the exit() is not printed (END's output still is)
        this.afterExit = true;
        this.session.stop();
        return;
      case AsyncAction.PRINT_MAP: {
        const plan = this.session.mapPlan(id);
        const top = Number(data.readBigUInt64LE(8));
        const div = Number(data.readBigUInt64LE(16));
        out.printMap(this.session.dumpMap(plan, { zeroScalar: true }), {
          ...(top ? { top } : {}),
          ...(div ? { div } : {}),
        });
        return;
      }
      case AsyncAction.CLEAR:
        this.session.clearMap(this.session.mapPlan(id));
        return;
      case AsyncAction.ZERO: {
        const m = this.session.mapFor(this.session.mapPlan(id));
        const zero = Buffer.alloc(m.valueBytes);
        for (const key of [...m.keys()]) m.update(key, zero);
        return;
      }
      case AsyncAction.TIME:
        out.time(formatTimeBuiltin(this.compiled.timeFormats[id]!));
        return;
      case AsyncAction.JOIN: {
        const parts: string[] = [];
        for (let i = 0; i < JOIN_MAX_ARGS; i++) {
          const off = 8 + i * JOIN_ARG_SIZE;
          if (off >= data.length || data[off] === 0) break;
          const end = data.indexOf(0, off);
          parts.push(data.toString('latin1', off, end < 0 || end > off + JOIN_ARG_SIZE ? off + JOIN_ARG_SIZE : end));
        }
        out.join(parts.join(this.compiled.joinSeparators[id] ?? ' '));
        return;
      }
      case AsyncAction.PRINT_VALUE: {
        const pv = this.compiled.printValues[id]!;
        out.printValue(decodeValue(data, 8, pv.type, this.valueCtx));
        return;
      }
    }
  }
}
