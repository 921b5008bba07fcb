/**
 * Where a stack tool's stacks go (profile, offcputime, offwaketime, stackcount): bcc's text report (multi-line, or
 * folded lines with `-f`), a flame graph file (`--svg FILE`), or `--format folded|svg|pprof|speedscope` written to
 * stdout or to `-o FILE`:
 * - `folded`: flamegraph.pl's input, the tool's `-f` lines (`frame;...;frame count`);
 * - `svg`: the flame graph flamegraph.pl would draw from the folded lines (the tool's palette and units);
 * - `pprof`: pprof's profile.proto (github.com/google/pprof proto/profile.proto) via the pprof-format package, with
 *   the sample types of src/flame/export/pprof.ts (`samples/count` + `cpu/nanoseconds` for profile,
 *   `offcpu/nanoseconds` for off-CPU time, `events/count` for stackcount, `space/bytes` for memleak's outstanding
 *   bytes);
 * - `speedscope`: speedscope's file format (https://www.speedscope.app/file-format-schema.json), one sampled
 *   profile weighted by the counts.
 * The exports are made from the same folded lines the tool prints with `-f`.
 */
import { writeFileSync } from 'node:fs';
import { BpfscopeError } from '../../errors.js';
import { type FlameGraphOptions, renderFlameGraph } from '../../flame/flamegraph.js';
import { stacksToPprof } from '../../flame/export/pprof.js';
import { stacksToSpeedscope } from '../../flame/export/speedscope.js';
import { ExportError, readFoldedStacks } from '../../flame/export/stacks.js';
import type { ValueType } from './argparse.js';
import type { ToolWriter } from './output.js';

export const STACK_FORMATS = ['folded', 'svg', 'pprof', 'speedscope'] as const;
export type StackFileFormat = (typeof STACK_FORMATS)[number];

const FORMAT: ValueType<StackFileFormat> = {
  name: 'format',
  convert: (text: string) => {
    if ((STACK_FORMATS as readonly string[]).includes(text)) return text as StackFileFormat;
    throw new Error(`argparse: invalid choice: '${text}' (choose from 'folded', 'svg', 'pprof', 'speedscope')`);
  },
};

/** The shared options (after the tool's own): `--format FORMAT` and `-o/--output FILE`. */
export const STACK_OUTPUT_OPTIONS = [
  {
    flags: ['--format'],
    kind: 'value',
    metavar: 'FORMAT',
    type: FORMAT,
    help: 'write the stacks as folded, svg (a flame graph), pprof (profile.proto) or speedscope (JSON) to stdout or to the -o file, instead of the report',
  },
  { flags: ['-o', '--output'], kind: 'value', metavar: 'FILE', help: 'the file --format writes' },
] as const;

/** The `--format` value type (folded, svg, pprof, speedscope), for a tool declaring its own `--format` help. */
export const STACK_FORMAT_TYPE = FORMAT;

/** What the counts of a tool's stacks are, for the exports. */
export interface StackMeta {
  tool: string;
  /** pprof sample types: CPU samples (profile), off-CPU microseconds, event counts (stackcount) or bytes (memleak). */
  kind: 'cpu' | 'offcpu' | 'count' | 'space';
  /** cpu: nanoseconds between samples. */
  periodNs?: number;
  /** The flame graph's options (palette, count name, title). */
  flame: Partial<FlameGraphOptions>;
}

/** The parsed output options of a stack tool. */
export interface StackOutputArgs {
  folded: boolean;
  svg?: string | null;
  format?: StackFileFormat | null;
  output?: string | null;
}

/** bcc's text report, the export to write, and whether the "Tracing ..." header is printed. */
export class StackOutput {
  private constructor(
    /** What goes to stdout as bcc's text: the multi-line report, the folded lines, or nothing. */
    readonly text: 'report' | 'folded' | 'none',
    /** The export: its format and file (null: stdout). */
    readonly file: { format: StackFileFormat; path: string | null } | null,
  ) {}

  /** The header is printed when stdout carries bcc's multi-line report or only messages (bcc: not with -f). */
  get header(): boolean {
    return this.text !== 'folded' && !(this.file && this.file.path === null);
  }

  /**
   * The output for the options `a`. @throws BpfscopeError for `-o` without `--format`, `--svg` with `--format`,
   * or two things written to stdout (`-f` with `--format` other than folded and no `-o`). `outputFlag` names the
   * output option in these messages (memleak has only `--output`: its `-o` is bcc's `--older`).
   */
  static from(a: StackOutputArgs, tool: string, outputFlag = '-o/--output'): StackOutput {
    const o = outputFlag.split('/')[0]!;
    const format = a.format ?? null;
    const output = a.output ?? null;
    const svg = a.svg ?? null;
    if (output !== null && format === null) throw new BpfscopeError(`${tool}: ${outputFlag} FILE goes with --format`);
    if (svg !== null && format !== null) {
      throw new BpfscopeError(
        `${tool}: give --svg FILE or --format ${format}, not both (--format svg ${o} FILE is --svg FILE)`,
      );
    }
    if (svg !== null) return new StackOutput(a.folded ? 'folded' : 'none', { format: 'svg', path: svg });
    if (format === null) return new StackOutput(a.folded ? 'folded' : 'report', null);
    if (output === null) {
      if (format === 'folded') return new StackOutput('folded', null);
      if (a.folded)
        throw new BpfscopeError(`${tool}: -f and --format ${format} would both write to stdout: add ${o} FILE`);
      return new StackOutput('none', { format, path: null });
    }
    return new StackOutput(a.folded ? 'folded' : 'none', { format, path: output });
  }

  /** Create (truncate) the output file before tracing, so that an unwritable path fails at once. */
  prepare(tool: string): void {
    if (this.file?.path) writeOut(this.file.path, '', tool, this.file.format);
  }

  /**
   * Write the export of `folded` (the tool's folded lines) as this output says; flame graph warnings go to stderr.
   * A file export prints `Wrote a FORMAT of N stacks to FILE (B bytes).` unless stdout has the folded lines.
   * @throws BpfscopeError when the file cannot be written or the stacks cannot be converted
   */
  finish(folded: string[], meta: StackMeta, writer: ToolWriter): void {
    if (!this.file) return;
    if (this.file.path === null && writer.mode !== 'text') return;
    const data = exportStacks(this.file.format, folded, meta, writer);
    writer.flush();
    if (this.file.path === null) {
      process.stdout.write(data);
      return;
    }
    writeOut(this.file.path, data, meta.tool, this.file.format);
    const what = this.file.format === 'svg' ? 'flame graph' : `${this.file.format} profile`;
    if (this.text !== 'folded')
      writer.line(`Wrote a ${what} of ${folded.length} stacks to ${this.file.path} (${data.length} bytes).`);
  }
}

function writeOut(path: string, data: string | Uint8Array, tool: string, format: StackFileFormat): void {
  try {
    writeFileSync(path, data);
  } catch (e) {
    const what = format === 'svg' ? 'the flame graph' : `the ${format} output`;
    throw new BpfscopeError(`${tool}: cannot write ${what} to ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * The bytes of `format` for the folded lines `folded` (`frame;...;frame count`). @throws BpfscopeError when the
 * stacks cannot be converted (e.g. an off-CPU count that is not a whole number of nanoseconds)
 */
export function exportStacks(format: StackFileFormat, folded: string[], meta: StackMeta, writer: ToolWriter): Buffer {
  if (format === 'folded') return Buffer.from(folded.map((l) => `${l}\n`).join(''));
  if (format === 'svg') {
    const r = renderFlameGraph(folded, meta.flame);
    for (const w of r.warnings) writer.err.write(`${meta.tool}: flame graph: ${w}\n`);
    if (r.error) writer.err.write(`${meta.tool}: flame graph: ${r.error}\n`);
    return Buffer.concat(r.chunks);
  }
  try {
    const stacks = readFoldedStacks(folded);
    if (format === 'pprof') {
      return Buffer.from(stacksToPprof(stacks, { kind: meta.kind, periodNs: meta.periodNs, unitNs: 1000 }));
    }
    const doc = stacksToSpeedscope(stacks, {
      name: meta.tool,
      unit: meta.kind === 'offcpu' ? 'microseconds' : meta.kind === 'space' ? 'bytes' : 'none',
      exporter: 'bpfscope',
    });
    return Buffer.from(`${JSON.stringify(doc)}\n`);
  } catch (e) {
    if (e instanceof ExportError) throw new BpfscopeError(`${meta.tool}: ${e.message}`);
    throw e;
  }
}
