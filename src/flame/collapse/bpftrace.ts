/**
 * Collapses bpftrace (and bpfscope) map output keyed by stacks into folded stacks, following FlameGraph's
 * stackcollapse-bpftrace.pl. bpftrace prints a stack key as a line break, one indented frame per line (leaf
 * first), and a line break; several keys are separated by ", "; the entry ends with "]: COUNT":
 *
 *     @[
 *         tcp_sendmsg+1
 *         sock_sendmsg+62
 *     ,
 *         __libc_send+19
 *     , iperf]: 3
 *
 * Each entry becomes one folded line, in input order and without merging (as the Perl script prints them): all
 * keys' frames, reversed so the root comes first; scalar keys (the comm above) come first of all:
 * "iperf;__libc_send+19;sock_sendmsg+62;tcp_sendmsg+1 3". For `@[kstack]`, `@[kstack, comm]` and
 * `@[, comm]: N` (empty stack) the output is the Perl script's, byte for byte.
 *
 * Extensions where the Perl script gives nothing useful: named maps (`@stacks[`), an empty first stack
 * (`@[, ` then frames: the Perl script drops such entries, so user-only samples of `@[kstack, ustack, comm]` were
 * lost), and the "," line between two stack keys (the Perl script keeps it as a frame named ",").
 */
import type { StackCollapser } from './collapser.js';

/** Start of an entry whose key begins with a stack: "@[" or "@name[" and nothing else. */
const ENTRY_STACK = /^@\w*\[$/;
/** One-line entry with an empty first stack: "@[, comm]: 5". */
const ENTRY_EMPTY_STACK = /^@\w*\[,[\t\n\v\f\r ](.*)\]: (\d+)/s;
/** Entry whose first key is an empty stack and a second stack follows: "@[, " or "@[,". */
const ENTRY_EMPTY_THEN_STACK = /^@\w*\[,[\t\n\v\f\r ]?$/;
/** Entry with leading scalar keys and then a stack: "@[bash, ". */
const ENTRY_SCALAR_THEN_STACK = /^@\w*\[(.+?),[\t\n\v\f\r ]?$/s;
/** End of an entry: optional ", other keys", "]: COUNT". */
const ENTRY_END = /^,?[\t\n\v\f\r ]?(.*)\]: (\d+)/s;
/** The separator line between two stack keys. */
const KEY_SEPARATOR = /^,[\t\n\v\f\r ]*$/;

export class BpftraceCollapser implements StackCollapser {
  private readonly decoder = new TextDecoder('latin1');
  private carry = '';
  private inEntry = false;
  private stack: string[] = [];
  /** Scalar keys before the first stack ("@[comm, " ...), printed first. */
  private lead: string | null = null;
  private out: string[] = [];

  push(chunk: Uint8Array): void {
    const text = this.carry + this.decoder.decode(chunk, { stream: true });
    let pos = 0;
    for (;;) {
      const nl = text.indexOf('\n', pos);
      if (nl < 0) break;
      this.line(text.slice(pos, nl));
      pos = nl + 1;
    }
    this.carry = text.slice(pos);
  }

  endFile(): void {
    if (this.carry !== '') {
      const line = this.carry;
      this.carry = '';
      this.line(line);
    }
  }

  *finish(): Generator<Uint8Array> {
    this.endFile();
    const out = this.out;
    this.out = [];
    for (let i = 0; i < out.length; i += 4096) yield Buffer.from(out.slice(i, i + 4096).join(''), 'latin1');
  }

  private line(line: string): void {
    if (!this.inEntry) {
      if (ENTRY_STACK.test(line) || ENTRY_EMPTY_THEN_STACK.test(line)) {
        this.inEntry = true;
        this.stack = [];
        this.lead = null;
        return;
      }
      const empty = ENTRY_EMPTY_STACK.exec(line);
      if (empty) {
        this.out.push(`${empty[1]} ${empty[2]}\n`);
        return;
      }
      const scalar = line.includes(']: ') ? null : ENTRY_SCALAR_THEN_STACK.exec(line);
      if (scalar) {
        this.inEntry = true;
        this.stack = [];
        this.lead = scalar[1]!;
      }
      return;
    }
    const end = ENTRY_END.exec(line);
    if (end) {
      // ", , comm]: 1": an empty stack key before the scalar keys.
      const rest = end[1]!.replace(/^(?:,[\t ]?)+/, '');
      if (rest.length) this.stack.push(rest);
      const frames = this.stack.reverse();
      if (this.lead !== null) frames.unshift(this.lead);
      this.out.push(`${frames.join(';')} ${end[2]}\n`);
      this.inEntry = false;
      this.stack = [];
      this.lead = null;
    } else if (!KEY_SEPARATOR.test(line)) {
      this.stack.push(line.replace(/^[\t\n\v\f\r ]+/, ''));
    }
  }
}
