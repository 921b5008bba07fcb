/**
 * What a builtin module (`lang/builtins/*.ts`) declares, and what the analyser and the code generator offer it;
 * the modules are collected in `registry.ts`.
 */
import type { CallExpr, Expr, MapExpr, Span, TypeSpec } from '../ast.js';
import type { ExpandedProbe } from '../probe.js';
import type { Target } from '../target.js';
import type { AddrSpace, SType } from '../types.js';

/**
 * Whether bpfscope implements a bpftrace builtin: `yes`; `not yet` (a known bpftrace v0.26 name, refused with
 * "does not support yet"); `impossible` (cannot work on the kernels bpfscope targets; `reason` says why).
 */
export type BuiltinStatus = 'yes' | 'not yet' | 'impossible';

/** A builtin's row in docs/language.md's generated status table (markdown). */
export interface BuiltinDoc {
  /** How it is written, e.g. `` `nsecs([clock])` ``. */
  readonly usage: string;
  /** What it gives and its limits, in one or two sentences; the reason when the status is not `yes`. */
  readonly note?: string;
}

/** What the analyser offers a builtin's check. */
export interface BuiltinChecker {
  /** Type an argument expression (null when it has an error, already reported). */
  expr(e: Expr): SType | null;
  /** Replace the type recorded for an expression typed already (code generation reads this one). */
  setType(e: Expr, t: SType): void;
  /** Report an error at `pos` (bpftrace's wording). */
  error(pos: Span | undefined, message: string): void;
  /** Report a warning at `pos` (bpftrace's wording); only in the final pass. */
  warn(pos: Span, message: string): void;
  /** Check the argument count; false (and the error `NAME() requires N arguments (M provided)`) when it is wrong. */
  argCount(c: CallExpr, min: number, max: number): boolean;
  /** The value of a compile-time integer expression (literal, positional, sizeof, constant arithmetic), or null. */
  constValue(e: Expr): bigint | null;
  /** The address space an expression's address points into (its type's, else the probe's). */
  addressSpace(e: Expr): AddrSpace;
  /** The address space known for an expression's value (a typed pointer, a variable assigned one), or undefined. */
  spaceOf(e: Expr): AddrSpace | undefined;
  /** Argument `i` when it is a map (`@m`, `@m[k]`); else null after the error `NAME() expects a map argument`. */
  mapArg(c: CallExpr, i: number): MapExpr | null;
  /** The map `@name` as typed so far (key element types, `[]` for `@x`; value type), or undefined. */
  map(name: string):
    | {
        readonly keyTypes: readonly SType[];
        readonly valueType: SType;
        /** The key types as bpftrace types them (lang/bt-int-types.ts), for messages. */
        readonly btKeyTypes?: readonly { readonly type: SType }[];
      }
    | undefined;
  /** Report `Undefined map: @m` (with a "Did you mean" hint) when the program has no map `m`. */
  checkMapExists(m: MapExpr): void;
  /** Type `m`'s key expressions (null after an error). */
  mapKeyTypes(m: MapExpr): SType[] | null;
  /** Whether a struct copied as a value fits the BPF stack; false after a positioned error. */
  structValueFits(pos: Span, t: Extract<SType, { kind: 'record' }>): boolean;
  /** `getopt()`: record option `name` (its `-- --help` description) and give its value from the command line. */
  namedOption(name: string, description: string): string | true | undefined;
  /** The last typing pass (errors that depend on every probe's types are reported in it only). */
  readonly final: boolean;
  /** The attach point being analysed. */
  readonly probe: ExpandedProbe;
  /** `max_strlen` (config; bpftrace's default 64 bytes). */
  readonly maxStrlen: number;
  /** `stack_mode` (config): the mode of `kstack`/`ustack` written without one. */
  readonly stackMode: 'bpftrace' | 'perf' | 'raw' | 'build_id';
  /** `--unsafe` was given. */
  readonly unsafe: boolean;
  readonly target: Target;
}

/** A value in generated code: a register, or bytes on the BPF stack at frame offset `off` (ProbeGen's `Val`). */
export type GenValue = { kind: 'reg'; reg: number } | { kind: 'mem'; off: number; size: number };

/** What the code generator offers a builtin's code: registers are virtual (bpf/insn.ts VREG_BASE and up). */
export interface BuiltinGen {
  /** The type the semantic pass gave an expression of this program (the call itself or an argument). */
  typeOf(e: Expr): SType;
  /** The register holding a scalar argument's value. */
  scalar(e: Expr): number;
  /** Bytes of a string/array/struct-valued argument on the stack. */
  mem(e: Expr): { off: number; size: number };
  /** A register holding the constant `v`. */
  constant(v: bigint | number): number;
  /** Call helper `id` (bpf/helpers.ts HELPER_ID) with registers as its arguments; the register holding r0. */
  callHelper(id: number, args: ({ stack: number } | { imm: number } | { map: string } | number)[]): number;
  /** A constant byte string on the stack, zero-padded to `size`. */
  constBytes(bytes: Uint8Array, size: number): GenValue;
  /** `size` zeroed bytes on the stack (a probe-local temporary); their frame offset. */
  zeroedTemp(size: number): number;
  /** Emit instructions (bpf/insn.ts constructors, registers virtual). */
  emit(...insns: import('../../bpf/insn.js').Insn[]): void;
  /** A fresh virtual register. */
  vreg(): number;
  /** A fresh label (`prefix` + a number), placed with {@link mark}. */
  newLabel(prefix: string): string;
  mark(label: string): void;
  /** The frame pointer register (r10): stack offsets are relative to it. */
  readonly fb: number;
  /** The attach point this program is generated for. */
  readonly probe: ExpandedProbe;
  readonly target: Target;
}

/** A builtin function, `name(args...)`. */
export interface BuiltinFunction {
  readonly name: string;
  /** Default `yes`. */
  readonly status?: BuiltinStatus;
  /**
   * What the call is: a value (default); a `statement` (printf, exit, ...: no value); an `aggregation` (count(),
   * hist(), ...: only assigned to a map); a `type` (typeof: used where a type is written).
   */
  readonly role?: 'value' | 'statement' | 'aggregation' | 'type';
  /** Arguments accepted: `[min, max]` (checked before {@link check}). */
  readonly arity?: readonly [number, number];
  /**
   * Check the call's arguments; the result type, or null after an error. Absent: the analyser's own `call()`
   * still holds this builtin (not moved yet), or it is not implemented (`status`).
   */
  check?(c: CallExpr, a: BuiltinChecker): SType | null;
  /** Generate the call; `c` passed {@link check} and is typed (`g.typeOf(c)`). A register or stack bytes. */
  generate?(c: CallExpr, g: BuiltinGen): number | GenValue;
  /**
   * For role `type`: the type `name(arg)` stands for where a type is written (`arg` is an expression or a written
   * type): as written (name, pointer depth, array count) and, when known, as an SType; null after an error.
   */
  typeOf?(
    arg: Expr | TypeSpec,
    a: BuiltinChecker,
  ): { written: Pick<TypeSpec, 'name' | 'pointerDepth' | 'arrayCount'>; type?: SType } | null;
  readonly doc: BuiltinDoc;
}

/** A builtin variable, `name`. */
export interface BuiltinVariable {
  readonly name: string;
  /** Default `yes`. */
  readonly status?: BuiltinStatus;
  /** Its type when it does not depend on the probe (absent: the analyser's `builtin()` types it). */
  readonly type?: SType;
  /** Generate the read (absent: the generator's `builtin()` still holds it); a register or stack bytes. */
  generate?(g: BuiltinGen, t: SType): number | GenValue;
  /** `name()` is a function of its own (`nsecs(boot)`, `kstack(perf)`), not this variable spelled as a call. */
  readonly ownFunction?: boolean;
  /** A family of names (`argN`: `arg0`, `arg1`, ...); `name` is then only its documented spelling. */
  readonly pattern?: RegExp;
  /** Not one of the parser's builtin identifiers (so `(ppid)` may still be read as a cast). */
  readonly notParserName?: boolean;
  readonly doc: BuiltinDoc;
}
