/**
 * `printf` in an iter probe is the kernel's bpf_seq_printf (codegen/gen-calls.ts seqPrintf): the kernel formats it
 * (kernel/bpf/helpers.c bpf_bprintf_prepare), which understands less than bpftrace's user-space printf and writes
 * nothing at all for a format it refuses. So the analyser allows only what the kernel formats: the conversions
 * `%d %i %u %x %X` (with `l`/`ll`), `%s`, `%c`, `%p` (`%pK`, `%px`), the flags `0 + - space` and a width, `%%`;
 * at most 12 values (MAX_BPRINTF_VARARGS); printable ASCII text. A string is passed by its address, an integer,
 * bool or pointer as a 64-bit value.
 */
import type { CallExpr } from '../ast.js';
import { type SType, typeName } from '../types.js';
import type { BuiltinChecker } from './types.js';

/** The kernel's limit on bpf_seq_printf's values (include/linux/bpf.h MAX_BPRINTF_VARARGS). */
const MAX_VALUES = 12;

/** One conversion bpf_bprintf_prepare accepts: flags, a width, then the conversion. */
const CONVERSION = /^%[0+\- ]*(?:[1-9][0-9]*)?(s|c|p(?:[Kx]|(?![A-Za-z0-9]))|(?:ll|l)?[diuxX])/;

/**
 * The conversions of `fmt` as the kernel reads them (`s`, `c`, `p`, `d`, `u`, ...), or the error sentence for the
 * first thing it refuses.
 */
export function seqPrintfConversions(fmt: string): { convs: string[] } | { error: string } {
  const convs: string[] = [];
  for (let i = 0; i < fmt.length; i++) {
    const ch = fmt.charCodeAt(i);
    const printable = (ch >= 0x20 && ch < 0x7f) || (ch >= 0x09 && ch <= 0x0d);
    if (!printable) {
      return { error: 'the kernel formats only printable ASCII text and white space in an iter probe' };
    }
    if (fmt[i] !== '%') continue;
    if (fmt[i + 1] === '%') {
      i++;
      continue;
    }
    const m = CONVERSION.exec(fmt.slice(i));
    if (!m) {
      const shown = /^%[^a-zA-Z]*[hlLjzt]*[a-zA-Z]?/.exec(fmt.slice(i))![0];
      return {
        error:
          `the conversion ${shown} is not supported in an iter probe: the kernel's bpf_seq_printf formats only ` +
          '%d %i %u %x %X (with l or ll), %s, %c and %p, with the flags 0 + - space and a width',
      };
    }
    const c = m[1]!;
    convs.push(c.startsWith('p') ? 'p' : c.replace(/^l+/, ''));
    i += m[0].length - 1;
  }
  return { convs };
}

/** Check an iter probe's printf: its format (above) and the types of its values. */
export function checkSeqPrintf(c: CallExpr, types: readonly SType[], a: BuiltinChecker): void {
  const fmt = (c.args[0] as { value: string }).value;
  const r = seqPrintfConversions(fmt);
  if ('error' in r) {
    a.error(c.args[0]!.pos, r.error);
    return;
  }
  if (types.length > MAX_VALUES) {
    a.error(c.pos, `printf in an iter probe takes at most ${MAX_VALUES} values (the kernel's bpf_seq_printf)`);
    return;
  }
  r.convs.forEach((conv, i) => {
    const t = types[i];
    if (!t) return; // a missing value: the common printf check reports it
    const ok = conv === 's' ? t.kind === 'string' : t.kind === 'int' || t.kind === 'bool' || t.kind === 'pointer';
    if (!ok) {
      a.error(
        c.args[i + 1]!.pos,
        `printf in an iter probe cannot print a value of type ${typeName(t)} with %${conv === 'p' ? 'p' : conv}: ` +
          (conv === 's'
            ? '%s takes a string there (the kernel formats it)'
            : 'the kernel formats only integers, bools and pointers with it'),
      );
    }
  });
}
