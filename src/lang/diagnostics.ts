/**
 * Compiler diagnostics: errors and warnings with a source span, printed like bpftrace
 * (`FILE:LINE:COL: ERROR: message`, then the source line and a caret/tilde marker under the span).
 *
 * The format is bpftrace v0.26's (`src/ast/location.cpp` `source_location()`/`source_context()`, `src/log.cpp`,
 * `src/ast/diagnostic.cpp`):
 *
 * ```
 * stdin:1:14-15: ERROR: syntax: expected expression
 * BEGIN { @x = ; }
 *              ~
 * HINT: optional hint line
 * ```
 *
 * - single-line span: `FILE:LINE:COL-ENDCOL` (ENDCOL exclusive, so a one-character span reads `14-15`; an empty span
 *   at the end of the input reads `21-21`), then the source line (tabs expanded to 4 spaces) and a marker line: a
 *   space under every character before the span, `~` under every character of the span (4 for a tab), nothing
 *   after it, and never past the end of the line; a line longer than 1,000 characters is shown as the 80 characters
 *   either side of the span with `...` where it is cut (bpfscope's own: bpftrace prints the whole line);
 * - multi-line span: `FILE:LINE-ENDLINE`, then every line of the span as written and no marker line;
 * - no span: just `ERROR: message`;
 * - a span in code expanded from a macro: then `FILE:LINE:COL-ENDCOL: ERROR: expanded from` at the macro's call.
 * Columns count UTF-16 code units (bpftrace counts bytes; the two agree on ASCII sources).
 */
import { BpfscopeError } from '../errors.js';
import type { Span } from './ast.js';

/** A program's text and the name used in messages (`stdin` for `-e`, as bpftrace does, or the script's path). */
export interface SourceFile {
  name: string;
  text: string;
}

export interface Diagnostic {
  severity: 'error' | 'warning';
  message: string;
  /** Where in the source; absent for errors about the whole program. */
  pos?: Span;
  /** Extra line(s) printed after the marker, e.g. `HINT: did you mean ...`. */
  hint?: string;
}

/** Thrown by the parser and passes when a program has errors; carries every diagnostic collected. */
export class CompileError extends BpfscopeError {
  constructor(
    readonly diagnostics: Diagnostic[],
    readonly source?: SourceFile,
  ) {
    super(diagnostics.map((d) => d.message).join('\n'));
    this.name = 'CompileError';
  }
}

/** Start offsets of every line of `text` (lines end at '\n'; a text ending in '\n' has an empty last line). */
export class LineIndex {
  readonly starts: number[] = [0];
  constructor(readonly text: string) {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.starts.push(i + 1);
  }

  /** 1-based line and column of a 0-based offset (clamped to [0, text.length]). */
  lineCol(offset: number): { line: number; col: number } {
    const o = Math.max(0, Math.min(offset, this.text.length));
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] as number) <= o) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: o - (this.starts[lo] as number) + 1 };
  }

  /** The `Span` of the 0-based offsets [offset, end). */
  span(offset: number, end: number): Span {
    const { line, col } = this.lineCol(offset);
    return { line, col, offset, end: Math.max(offset, end) };
  }

  /** Text of 1-based line `n` without its '\n' ('' past the end). */
  lineText(n: number): string {
    const s = this.starts[n - 1];
    if (s === undefined) return '';
    const next = this.starts[n];
    return this.text.slice(s, next === undefined ? this.text.length : next - 1);
  }

  get lineCount(): number {
    return this.starts.length;
  }
}

const indexCache = new WeakMap<SourceFile, LineIndex>();

function indexOf(source: SourceFile): LineIndex {
  let idx = indexCache.get(source);
  if (!idx || idx.text !== source.text) {
    idx = new LineIndex(source.text);
    indexCache.set(source, idx);
  }
  return idx;
}

/** Source lines longer than this are shown only around the span (with `...`), and spans beyond it are cut. */
const LONG_LINE = 1000;
/** Characters of a long line shown before and after the span. */
const LONG_LINE_CONTEXT = 80;

/** ANSI colours bpftrace uses for log lines on a terminal (`src/log.h` `LogColor`). */
const RED = '\x1b[31m';
const YELLOW = '\x1b[33m';
const RESET = '\x1b[0m';

export interface FormatOptions {
  /** Colour the message line (red for errors, yellow for warnings), as bpftrace does on a terminal. */
  color?: boolean;
}

/**
 * One diagnostic in bpftrace's format (see the module comment): the message line, the source context lines, then
 * one `HINT: ...` line per line of `d.hint`. Lines are joined with '\n'; there is no trailing newline.
 */
export function formatDiagnostic(d: Diagnostic, source: SourceFile, opts: FormatOptions = {}): string {
  const label = d.severity === 'error' ? 'ERROR: ' : 'WARNING: ';
  const msg = d.message.endsWith('\n') ? d.message.slice(0, -1) : d.message;
  const out: string[] = [];
  let head: string;
  if (d.pos) {
    const idx = indexOf(source);
    const begin = idx.lineCol(d.pos.offset);
    const end = idx.lineCol(Math.max(d.pos.offset, d.pos.end));
    let loc: string;
    const context: string[] = [];
    if (begin.line !== end.line) {
      loc = `${source.name}:${begin.line}-${end.line}`;
      for (let l = begin.line; l <= end.line; l++) context.push(idx.lineText(l));
    } else {
      loc = `${source.name}:${begin.line}:${begin.col}-${end.col}`;
      if (begin.line <= idx.lineCount) {
        const full = idx.lineText(begin.line);
        // a very long line (a generated program) is shown around the span, so that thousands of errors on one
        // line cannot print (or hold in memory) the whole line each
        let from = 0;
        let to = full.length;
        if (full.length > LONG_LINE) {
          from = Math.max(0, begin.col - 1 - LONG_LINE_CONTEXT);
          to = Math.min(
            full.length,
            Math.max(begin.col - 1, Math.min(end.col - 1, begin.col - 1 + LONG_LINE)) + LONG_LINE_CONTEXT,
          );
        }
        const pre = from > 0 ? '...' : '';
        const line = full.slice(from, to);
        context.push(`${pre}${line.replaceAll('\t', '    ')}${to < full.length ? '...' : ''}`);
        let marker = ' '.repeat(pre.length);
        for (let x = 0; x < line.length && x + from < end.col - 1; x++) {
          const m = x + from < begin.col - 1 ? ' ' : '~';
          marker += line[x] === '\t' ? m.repeat(4) : m;
        }
        context.push(marker);
      }
    }
    head = `${loc}: ${label}${msg}`;
    out.push(colorize(head, d.severity, opts), ...context);
  } else {
    head = `${label}${msg}`;
    out.push(colorize(head, d.severity, opts));
  }
  if (d.pos?.expandedFrom) {
    // code from a macro: where the macro was called, as bpftrace (tests/runtime/call "errorf_macro_expansion")
    out.push(
      formatDiagnostic({ severity: d.severity, message: 'expanded from', pos: d.pos.expandedFrom }, source, opts),
    );
  }
  if (d.hint) {
    for (const h of d.hint.replace(/\n$/, '').split('\n')) out.push(h.startsWith('HINT: ') ? h : `HINT: ${h}`);
  }
  return out.join('\n');
}

function colorize(line: string, severity: Diagnostic['severity'], opts: FormatOptions): string {
  if (!opts.color) return line;
  return `${severity === 'error' ? RED : YELLOW}${line}${RESET}`;
}

/**
 * Several diagnostics, errors first then warnings (each group in the given order), as bpftrace emits them
 * (`Diagnostics::emit`). Joined with '\n', no trailing newline.
 */
export function formatDiagnostics(ds: readonly Diagnostic[], source: SourceFile, opts: FormatOptions = {}): string {
  const ordered = [...ds.filter((d) => d.severity === 'error'), ...ds.filter((d) => d.severity !== 'error')];
  return ordered.map((d) => formatDiagnostic(d, source, opts)).join('\n');
}
