/**
 * `typeof(expr)` / `typeof(TYPE)` (bpftrace v0.26 `docs/stdlib.md` "typeof", `docs/language.md` "Type Context
 * Builtins"): the static type of an expression, or the type itself, written where a type is: casts
 * (`(typeof(pid))x`), `let $a: typeof(comm);`, `sizeof(typeof(x))`, `offsetof(typeof(struct s), f)`. The argument is
 * only typed, never run. Elsewhere it is an error, as in bpftrace.
 *
 * `container_of(ptr, typeof(TYPE), member)` is declared here too (it takes a type); lang/passes/stdlib.ts rewrites it,
 * as it does `is_err(ptr)`, declared here for its documentation and its wrong-arity error.
 *
 * Where a scratch variable or a map is the argument, its type is bpfscope's stored one: integers widened to 64 bits
 * (bpftrace keeps a variable's declared width).
 */
import type { Expr, TypeSpec } from '../ast.js';
import { type SType, typeName } from '../types.js';
import type { BuiltinChecker, BuiltinFunction } from './types.js';

/** `t` as it is written in a cast or declaration (name, pointer depth, array count), or a message why it cannot be. */
export function writtenType(t: SType): Pick<TypeSpec, 'name' | 'pointerDepth' | 'arrayCount'> | string {
  switch (t.kind) {
    case 'int':
      return { name: `${t.signed ? '' : 'u'}int${t.size * 8}`, pointerDepth: 0, arrayCount: null };
    case 'bool':
      return { name: 'bool', pointerDepth: 0, arrayCount: null };
    case 'string':
      return { name: 'string', pointerDepth: 0, arrayCount: t.size };
    case 'record':
      return { name: t.name, pointerDepth: 0, arrayCount: null };
    case 'array': {
      const elem = writtenType(t.elem);
      if (typeof elem === 'string' || elem.arrayCount !== null) return `typeof(): arrays of ${typeName(t.elem)}`;
      return { ...elem, arrayCount: t.count };
    }
    case 'pointer': {
      const to = t.to.kind === 'none' ? { name: 'void', pointerDepth: 0, arrayCount: null } : writtenType(t.to);
      if (typeof to === 'string' || to.arrayCount !== null) return `typeof(): pointers to ${typeName(t.to)}`;
      return { ...to, pointerDepth: to.pointerDepth + 1 };
    }
    default:
      return `typeof(): values of type ${typeName(t)}`;
  }
}

export const TYPEOF_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'typeof',
    role: 'type',
    // (written where a value is, the parser keeps the argument in CallExpr.typeArg: `args` is empty)
    arity: [0, 1],
    check(c, a) {
      a.error(c.pos, 'typeof() can only be used where a type is written: a cast, a let declaration, sizeof, offsetof');
      return null;
    },
    typeOf(arg: Expr | TypeSpec, a: BuiltinChecker) {
      if (arg.kind === 'TypeSpec') return { written: arg };
      const type = a.expr(arg);
      if (!type) return null;
      const written = writtenType(type);
      if (typeof written === 'string') {
        a.error(arg.pos, `${written} cannot be written as a type`);
        return null;
      }
      return { written, type };
    },
    doc: {
      usage: '`typeof(expr)`, `typeof(TYPE)`',
      note: "in casts, `let` declarations, `sizeof` and `offsetof`; the argument is only typed, never run; a scratch variable's or map's integers are 64-bit (their stored type)",
    },
  },
  {
    name: 'container_of',
    check(c, a) {
      // container_of(ptr, typeof(TYPE), member) was rewritten by lang/passes/stdlib.ts: this is another form
      a.error(
        c.pos,
        'container_of() expects a pointer, typeof(TYPE) and a member name: container_of(ptr, typeof(struct s), f)',
      );
      return null;
    },
    doc: {
      usage: '`container_of(ptr, typeof(TYPE), member)`',
      note: '`(TYPE *)((uint64)ptr - offsetof(TYPE, member))`, a pointer to the object holding the member `ptr` points to',
    },
  },
  {
    name: 'is_err',
    check(c, a) {
      // is_err(ptr) was rewritten by lang/passes/stdlib.ts: this is another number of arguments
      a.error(c.pos, 'is_err() expects one argument, a pointer or an integer: is_err(retval)');
      return null;
    },
    doc: {
      usage: '`is_err(ptr)`',
      note: "whether `ptr` (pointer or integer) is an ERR_PTR, -4095..-1 as a 64-bit value (the kernel's `IS_ERR()`, bpftrace's stdlib macro)",
    },
  },
];
