/**
 * The builtin registry: one module per builtin or family declares its names, status, arity, argument checks, result
 * type, code generation and its row of docs/language.md (`types.ts` says what each declares); the parser, the stdlib
 * pass, the analyser (`lang/passes/semantic.ts`) and the code generator (`codegen/gen.ts` and its layers
 * `gen-*.ts`) ask this registry which names exist and what they are. A builtin's printed form follows its result
 * type (`lang/types.ts` kind → `runtime/decode.ts`), since printing may read the host (cgroupfs, /proc) and lang/
 * must not.
 *
 * Builtins whose check or code still lives in the analyser's `call()`/`builtin()` or the generator's
 * `callExpr()`/`builtin()` are declared here without `check`/`generate` (see docs/architecture.md).
 *
 * The registry sits in lang/, below codegen/: a builtin generates code through the small `BuiltinGen` interface
 * (types.ts; ProbeGen provides it) and instruction constructors from bpf/, and reads host facts only through the
 * Target it is given.
 */
import { CGROUP_FUNCTIONS, CGROUP_VARIABLES } from './cgroup.js';
import { CONTEXT_FUNCTIONS, CONTEXT_VARIABLES } from './context.js';
import { MAP_FUNCTIONS } from './maps.js';
import { NET_FUNCTIONS } from './net.js';
import { NOT_YET_FUNCTIONS, NOT_YET_VARIABLES } from './notyet.js';
import { OUTPUT_FUNCTIONS } from './output.js';
import { PROCESS_FUNCTIONS, PROCESS_VARIABLES } from './process.js';
import { STACK_FUNCTIONS, STACK_VARIABLES } from './stack.js';
import { STRING_FUNCTIONS } from './strings.js';
import { SYMBOL_FUNCTIONS } from './symbols.js';
import { TIME_FUNCTIONS, TIME_VARIABLES } from './time.js';
import { TSERIES_FUNCTIONS } from './tseries.js';
import { TYPEOF_FUNCTIONS } from './typeof.js';
import type { BuiltinFunction, BuiltinStatus, BuiltinVariable } from './types.js';

export type {
  BuiltinChecker,
  BuiltinDoc,
  BuiltinFunction,
  BuiltinGen,
  BuiltinStatus,
  BuiltinVariable,
  GenValue,
} from './types.js';

/** The families in the order docs/language.md lists them. */
export const BUILTIN_FAMILIES: readonly {
  title: string;
  variables: readonly BuiltinVariable[];
  functions: readonly BuiltinFunction[];
}[] = [
  { title: 'process and thread', variables: PROCESS_VARIABLES, functions: PROCESS_FUNCTIONS },
  { title: 'time', variables: TIME_VARIABLES, functions: TIME_FUNCTIONS },
  { title: 'probe context', variables: CONTEXT_VARIABLES, functions: CONTEXT_FUNCTIONS },
  { title: 'stacks', variables: STACK_VARIABLES, functions: STACK_FUNCTIONS },
  { title: 'cgroups', variables: CGROUP_VARIABLES, functions: CGROUP_FUNCTIONS },
  { title: 'maps and aggregations', variables: [], functions: [...MAP_FUNCTIONS, ...TSERIES_FUNCTIONS] },
  { title: 'output and actions', variables: [], functions: OUTPUT_FUNCTIONS },
  { title: 'strings and buffers', variables: [], functions: STRING_FUNCTIONS },
  { title: 'addresses and symbols', variables: [], functions: SYMBOL_FUNCTIONS },
  { title: 'networking', variables: [], functions: NET_FUNCTIONS },
  { title: 'types', variables: [], functions: TYPEOF_FUNCTIONS },
  { title: 'not yet', variables: NOT_YET_VARIABLES, functions: NOT_YET_FUNCTIONS },
];

function byName<T extends { name: string }>(lists: readonly (readonly T[])[]): ReadonlyMap<string, T> {
  const m = new Map<string, T>();
  for (const list of lists) {
    for (const x of list) {
      if (m.has(x.name)) throw new Error(`internal: builtin ${x.name} declared twice`);
      m.set(x.name, x);
    }
  }
  return m;
}

/** Builtin functions by name (every status). */
export const BUILTIN_FUNCTIONS: ReadonlyMap<string, BuiltinFunction> = byName(BUILTIN_FAMILIES.map((f) => f.functions));

/** Builtin variables by name (every status; `argN`/`sargN` are patterns, see {@link isBuiltinIdentifier}). */
export const BUILTIN_VARIABLES: ReadonlyMap<string, BuiltinVariable> = byName(BUILTIN_FAMILIES.map((f) => f.variables));

/** A builtin's status (`yes` unless declared otherwise). */
export function statusOf(b: BuiltinFunction | BuiltinVariable): BuiltinStatus {
  return b.status ?? 'yes';
}

/** The implemented builtin function `name`, or undefined. */
export function builtinFunction(name: string): BuiltinFunction | undefined {
  const f = BUILTIN_FUNCTIONS.get(name);
  return f && statusOf(f) === 'yes' ? f : undefined;
}

/** The implemented builtin variable `name`, or undefined. */
export function builtinVariable(name: string): BuiltinVariable | undefined {
  const v = BUILTIN_VARIABLES.get(name);
  return v && statusOf(v) === 'yes' ? v : undefined;
}

/** Names of the implemented functions (the analyser's "Did you mean" candidates), in family order. */
export const FUNCTION_NAMES: readonly string[] = [...BUILTIN_FUNCTIONS.values()]
  .filter((f) => statusOf(f) === 'yes')
  .map((f) => f.name);

/** Whether `name` is an aggregation function (count(), hist(), ...: only assigned to a map). */
export function isAggregationFunction(name: string): boolean {
  return builtinFunction(name)?.role === 'aggregation';
}

/** Whether `name(...)` may be written where a type is (`typeof`: a function of role `type`). */
export function isTypeFunction(name: string): boolean {
  return builtinFunction(name)?.role === 'type';
}

/**
 * The parser's builtin identifiers (bpftrace `Parser::is_builtin`): `(pid)` is never taken as a cast and
 * `sizeof(comm)` never as a type.
 */
export const PARSER_BUILTIN_NAMES: ReadonlySet<string> = new Set(
  [...BUILTIN_VARIABLES.values()]
    .filter((v) => statusOf(v) === 'yes' && !v.notParserName && !v.pattern)
    .map((v) => v.name),
);

/** The variables named by a pattern (`arg0`, `sarg1`, ...), of every status. */
const PATTERNED: readonly BuiltinVariable[] = [...BUILTIN_VARIABLES.values()].filter((v) => v.pattern);
const PATTERNS: readonly RegExp[] = PATTERNED.map((v) => v.pattern!);

/** The variable (of any status) `name` is, by name or pattern, or undefined. */
export function variableNamed(name: string): BuiltinVariable | undefined {
  return BUILTIN_VARIABLES.get(name) ?? PATTERNED.find((v) => v.pattern!.test(name));
}

/** Whether `name` is a builtin identifier of the parser: {@link PARSER_BUILTIN_NAMES} and the patterned ones. */
export function isBuiltinIdentifier(name: string): boolean {
  return PARSER_BUILTIN_NAMES.has(name) || PATTERNS.some((p) => p.test(name));
}

/** The implemented variables with a fixed type (the analyser's "Did you mean" candidates for identifiers). */
export const FIXED_TYPE_VARIABLES: ReadonlyMap<string, NonNullable<BuiltinVariable['type']>> = new Map(
  [...BUILTIN_VARIABLES.values()].filter((v) => statusOf(v) === 'yes' && v.type).map((v) => [v.name, v.type!]),
);
