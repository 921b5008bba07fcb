/**
 * Output and actions (bpftrace `docs/stdlib.md`): printf and its relatives (format parsing: lang/printf.ts; the
 * records: codegen/gen-calls.ts `printf()`; printing: runtime/output/printf.ts), `print`, `exit`, `system`/`cat`,
 * `signal` (`--unsafe`), `write_user` (`--unsafe`), and `getopt` (named program options after `--`). Their code,
 * but write_user's, is still in the generator's `callStmt()`.
 */
import { constants as osConstants } from 'node:os';
import { HELPER_ID as H } from '../../bpf/helpers.js';
import * as I from '../../bpf/insn.js';
import type { CallExpr } from '../ast.js';
import { checkPrintfArgs, compilePrintf } from '../printf.js';
import { checkSeqPrintf } from './seq-printf.js';
import { BOOL, I64, isAggregation, sizeOf, type SType, stringType, typeName, U64 } from '../types.js';
import { storageType } from '../typeops.js';
import type { BuiltinChecker, BuiltinFunction, BuiltinGen } from './types.js';

/**
 * `write_user(dst, src, len)` (current bpftrace's stdlib macro, `--unsafe`): `len` bytes from `src` (a string or
 * array value, or a pointer) to the user address `dst` with bpf_probe_write_user; true when the helper succeeded.
 * `len` is a compile-time integer, at most the size of a string or array `src`.
 */
function writeUserCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  if (!a.unsafe) {
    a.error(c.pos, 'write_user() is unsafe. To use you need the --unsafe flag');
    return null;
  }
  const [dst, src, len] = c.args as [CallExpr['args'][0], CallExpr['args'][0], CallExpr['args'][0]];
  const dt = a.expr(dst);
  const st = a.expr(src);
  if (dt && dt.kind !== 'pointer' && dt.kind !== 'int') {
    a.error(dst.pos, `write_user() expects a pointer destination (${typeName(dt)} provided)`);
    return null;
  }
  if (st && st.kind !== 'pointer' && st.kind !== 'int' && st.kind !== 'string' && st.kind !== 'array') {
    a.error(src.pos, `write_user() expects a string, array or pointer source (${typeName(st)} provided)`);
    return null;
  }
  const n = len.kind === 'IntLit' ? len.value : null;
  if (n === null || n <= 0n || n > 0xffffffffn) {
    a.error(len.pos, 'write_user() expects a positive integer literal length');
    return null;
  }
  if (st && (st.kind === 'string' || st.kind === 'array') && n > BigInt(sizeOf(st))) {
    a.error(len.pos, `write_user() length ${n} is larger than its source (${sizeOf(st)} bytes)`);
    return null;
  }
  return dt && st ? BOOL : null;
}

function writeUserGen(c: CallExpr, g: BuiltinGen): number {
  const [dst, src, len] = c.args as [CallExpr['args'][0], CallExpr['args'][0], CallExpr['args'][0]];
  const st = g.typeOf(src);
  const d = g.scalar(dst);
  const from = st.kind === 'string' || st.kind === 'array' ? { stack: g.mem(src).off } : g.scalar(src);
  const n = Number((len as Extract<typeof len, { kind: 'IntLit' }>).value);
  const r = g.callHelper(H.probe_write_user, [d, from, { imm: n }]);
  const out = g.vreg();
  const done = g.newLabel('wu');
  g.emit(I.mov64Imm(out, 0));
  g.emit(I.jmpImm('jne', r, 0, done));
  g.emit(I.mov64Imm(out, 1));
  g.mark(done);
  return out;
}

/** `NAME(fmt, args...)` (printf, errorf, warnf, debugf, system, cat): a format literal and printable values. */
function formatCheck(c: CallExpr, a: BuiltinChecker): SType {
  const args = c.args;
  if (c.name === 'system' && !a.unsafe) {
    a.error(c.pos, 'system() is an unsafe function being used in safe mode (use --unsafe)');
  }
  if (args.length === 0 || args[0]!.kind !== 'StrLit') {
    a.error(c.pos, `${c.name}() expects a string literal as its first argument`);
    args.forEach((x) => a.expr(x));
    return { kind: 'none' };
  }
  const types: SType[] = [];
  let ok = true;
  for (const x of args.slice(1)) {
    const t = a.expr(x);
    if (!t) ok = false;
    else types.push(t);
  }
  if (ok && a.final) {
    const err = checkPrintfArgs(compilePrintf((args[0] as { value: string }).value), types);
    if (err) a.error(c.pos, err);
    else if (c.name === 'printf' && a.probe.provider === 'iter') checkSeqPrintf(c, types, a);
  }
  if (c.name === 'debugf') {
    // bpf_trace_vprintk: at most 12 values, each an integer or a pointer (strings are passed by address)
    if (args.length > 13) a.error(c.pos, 'debugf() takes at most 12 arguments after the format');
    types.forEach((t, i) => {
      if (!['int', 'bool', 'pointer', 'string'].includes(t.kind))
        a.error(args[i + 1]!.pos, `debugf() cannot print a value of type ${typeName(t)}`);
    });
  }
  return { kind: 'none' };
}

/** `getopt(name[, default[, description]])`: typed by the default; the value is a constant of the call. */
function getoptCheck(c: CallExpr, a: BuiltinChecker): SType | null {
  const args = c.args;
  const name = args[0]!;
  if (name.kind !== 'StrLit') {
    a.error(name.pos, 'getopt() expects a string literal option name');
    return null;
  }
  if (args[2] && args[2].kind !== 'StrLit') a.error(args[2].pos, 'getopt() expects a string literal description');
  const given = a.namedOption(name.value, args[2]?.kind === 'StrLit' ? args[2].value : '');
  const def = args[1];
  const call = c as CallExpr & { getoptValue?: bigint | boolean | string };
  const bad = (kind: string): null => {
    // about the command line, not the program: no source position (bpftrace)
    a.error(undefined, `program command line option --${name.value} invalid ${kind} (value: ${String(given)})`);
    return null;
  };
  if (def === undefined || def.kind === 'BoolLit') {
    const d = def?.kind === 'BoolLit' ? def.value : false;
    const v =
      given === undefined
        ? d
        : given === true || /^(true|1)$/i.test(given)
          ? true
          : /^(false|0)$/i.test(given)
            ? false
            : undefined;
    if (v === undefined) return bad('boolean');
    call.getoptValue = v;
    return BOOL;
  }
  if (def.kind === 'StrLit') {
    const v = given === undefined ? def.value : given === true ? '' : given;
    call.getoptValue = v;
    return stringType(Buffer.byteLength(v) + 1);
  }
  const d = a.constValue(def);
  if (d === null) {
    a.error(def.pos, 'getopt() expects a literal default (an integer, a string or a bool)');
    return null;
  }
  let v = d;
  if (given !== undefined) {
    if (given === true || !/^-?(0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)$/i.test(given)) return bad('integer');
    const neg = given.startsWith('-');
    const mag = BigInt(neg ? given.slice(1) : given);
    v = neg ? -mag : mag;
  }
  call.getoptValue = v;
  return d < 0n ? I64 : U64;
}

/** Signal number for a name like `SIGKILL`/`KILL` (Linux numbering), or undefined. */
export function signalNumber(name: string): number | undefined {
  const n = name.toUpperCase().replace(/^SIG/, '');
  const signals = (osConstants.signals as Record<string, number>)[`SIG${n}`];
  return signals;
}

export const OUTPUT_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'printf',
    check: formatCheck,
    role: 'statement',
    doc: {
      usage: '`printf(fmt, ...)`',
      note: '`%d %i %u %x %X %o %s %c %p %%`, `%r`/`%rx`/`%rh` for buffers, `l`/`ll`/`h`/`hh` modifiers, widths, flags, precision',
    },
  },
  {
    name: 'errorf',
    check: formatCheck,
    role: 'statement',
    doc: { usage: '`errorf(fmt, ...)`', note: "on stderr as an ERROR at the call's location" },
  },
  {
    name: 'warnf',
    check: formatCheck,
    role: 'statement',
    doc: {
      usage: '`warnf(fmt, ...)`',
      note: "on stderr as a WARNING at the call's location (`--no-warnings` silences it)",
    },
  },
  {
    name: 'debugf',
    check: formatCheck,
    role: 'statement',
    doc: {
      usage: '`debugf(fmt, ...)`',
      note: "into the kernel's trace buffer with `bpf_trace_vprintk`; integers, pointers and strings, at most 12 values",
    },
  },
  {
    name: 'print',
    check(c, a) {
      const args = c.args;
      if (args.length === 0 || args.length > 3) {
        a.error(c.pos, 'print() requires 1 to 3 arguments');
        return { kind: 'none' };
      }
      const x = args[0]!;
      if (x.kind === 'MapExpr' && x.keys.length === 0) {
        a.checkMapExists(x);
        for (const y of args.slice(1)) {
          if (a.constValue(y) === null) a.error(y.pos, 'print(): top and div arguments must be integer literals');
        }
        return { kind: 'none' };
      }
      if (args.length > 1) a.error(c.pos, 'Non-map print() only takes 1 argument');
      const t = a.expr(x);
      if (t && (t.kind === 'none' || isAggregation(t)))
        a.error(x.pos, `print() can not print a value of type ${typeName(t)}`);
      if (t?.kind === 'record' && a.structValueFits(x.pos, t)) a.setType(x, storageType(t));
      return { kind: 'none' };
    },
    role: 'statement',
    doc: { usage: '`print(@m[, top[, div]])`, `print(value)`' },
  },
  {
    name: 'exit',
    role: 'statement',
    check(c, a) {
      if (c.args.length > 1) a.error(c.pos, 'exit() takes at most one argument');
      const t = c.args[0] ? a.expr(c.args[0]) : null;
      if (t && t.kind !== 'int')
        a.error(c.args[0]!.pos, `exit() expects an integer exit code (${typeName(t)} provided)`);
      return { kind: 'none' };
    },
    doc: { usage: '`exit([code])`' },
  },
  { name: 'system', role: 'statement', check: formatCheck, doc: { usage: '`system(fmt, ...)`', note: '`--unsafe`' } },
  { name: 'cat', role: 'statement', check: formatCheck, doc: { usage: '`cat(fmt, ...)`' } },
  {
    name: 'signal',
    role: 'statement',
    check(c, a) {
      if (!a.argCount(c, 1, 1)) return { kind: 'none' };
      if (!a.unsafe) a.error(c.pos, 'signal() is an unsafe function being used in safe mode (use --unsafe)');
      const x = c.args[0]!;
      if (x.kind === 'StrLit') {
        if (signalNumber(x.value) === undefined) a.error(x.pos, `Invalid signal: ${x.value}`);
      } else {
        const t = a.expr(x);
        if (t && t.kind !== 'int') a.error(x.pos, `signal() expects a signal name or number (${typeName(t)} provided)`);
      }
      return { kind: 'none' };
    },
    doc: { usage: '`signal(sig)`', note: '`--unsafe`' },
  },
  {
    name: 'assert',
    role: 'statement',
    check(c, a) {
      // a statement assert(cond, msg) was rewritten to an if by lang/passes/stdlib.ts: this is any other use
      a.error(c.pos, 'assert() is a statement of two arguments: assert(condition, message)');
      return null;
    },
    doc: {
      usage: '`assert(cond, msg)`',
      note: 'a statement: when `cond` is false, the error `assert failed: MSG` at the assert, and exit code 1',
    },
  },
  {
    name: 'write_user',
    arity: [3, 3],
    check: writeUserCheck,
    generate: writeUserGen,
    doc: {
      usage: '`write_user(dst, src, len)`',
      note: '`--unsafe`; `len` bytes to the user address `dst` (bpf_probe_write_user), true on success',
    },
  },
  {
    name: 'getopt',
    arity: [1, 3],
    check: getoptCheck,
    doc: {
      usage: '`getopt(name[, default[, description]])`',
      note: 'named program options after `--` (`-- --aa=5 --dd`), typed by the default; `-- --help` lists them',
    },
  },
];
