/**
 * Compiler diagnostics: errors and warnings with a source span, printed like bpftrace
 * (`FILE:LINE:COL: ERROR: message`, then the source line and a caret/tilde marker under the span).
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
