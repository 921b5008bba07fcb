/**
 * Integer constants from C preprocessor definitions, the part of bpftrace's clang preprocessing that programs use
 * most: `#define NAME VALUE` lines in the program and in the headers it includes (`#include <errno.h>`, or
 * bpftrace's `--include FILE`, which is `#include <FILE>` before the program), so that `strerror(EPERM)` or
 * `_MY_LIMIT` read as numbers. bpfscope has no C preprocessor: only object-like macros whose value is an integer
 * expression (literals, other such macros, parentheses, unary and binary arithmetic) are kept, the first definition
 * of a name wins, and function-like macros are skipped. Conditionals (`#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`)
 * are evaluated with the definitions seen so far and the target's predefined macros (`__x86_64__`, `__LP64__`,
 * `__linux__`, as clang predefines them for bpftrace), so `<asm/unistd.h>` gives `__NR_nanosleep` = 35 on x86-64
 * and not the i386 value; a condition bpfscope cannot evaluate (a function-like macro in it) counts as true for
 * every branch of its chain. Headers are searched in the `-I` directories, then `/usr/local/include`, the multiarch
 * directory (`/usr/include/x86_64-linux-gnu`) and `/usr/include`; an `#include` of the program that is not found
 * there is left alone (kernel types come from BTF), while a missing `--include` file is an error, as in bpftrace.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BpfscopeError } from '../errors.js';
import { parseIntLiteral } from './lexer.js';

/** Where headers are searched after the `-I` directories. */
function systemIncludeDirs(): string[] {
  const arch = process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : process.arch;
  return ['/usr/local/include', `/usr/include/${arch}-linux-gnu`, '/usr/include'];
}

export interface MacroOptions {
  /** `--include FILE`: headers included before the program. */
  includeFiles?: readonly string[];
  /** `-I DIR`: directories searched first. */
  includeDirs?: readonly string[];
}

/** Headers followed at most this deep (a guard against include cycles the visited set does not catch). */
const MAX_DEPTH = 32;

/**
 * The integer macros of a program: name → value.
 * @throws BpfscopeError when a `--include` file is not found
 */
export function integerMacros(programText: string, opts: MacroOptions = {}): Map<string, bigint> {
  const dirs = [...(opts.includeDirs ?? []), ...systemIncludeDirs()];
  const bodies = new Map<string, string>();
  const visited = new Set<string>();
  const find = (name: string, from?: string): string | undefined => {
    if (name.startsWith('/')) return existsSync(name) ? name : undefined;
    const here = from ? [from] : [];
    for (const d of [...here, ...dirs]) {
      const p = join(d, name);
      if (existsSync(p)) return p;
    }
    return undefined;
  };
  const scan = (text: string, dir: string | undefined, depth: number): void => {
    // join continued lines, drop comments
    const clean = text
      .replace(/\\\r?\n/g, ' ')
      .replace(/\/\*[\s\S]*?\*\//g, ' ')
      .replace(/\/\/[^\n]*/g, '');
    const conds = new Conditionals(bodies);
    for (const line of clean.split('\n')) {
      if (conds.directive(line) || !conds.active) continue;
      const inc = /^\s*#\s*include\s*[<"]([^>"]+)[>"]/.exec(line);
      if (inc) {
        const path = depth < MAX_DEPTH ? find(inc[1]!, dir) : undefined;
        if (path && !visited.has(path)) {
          visited.add(path);
          scan(readHeader(path), path.slice(0, path.lastIndexOf('/')), depth + 1);
        }
        continue;
      }
      const def = /^\s*#\s*define\s+([A-Za-z_]\w*)(?!\()\s*(.*)$/.exec(line);
      if (def && !bodies.has(def[1]!)) bodies.set(def[1]!, def[2]!.trim());
    }
  };
  for (const f of opts.includeFiles ?? []) {
    const path = find(f);
    if (!path) throw new BpfscopeError(`'${f}' file not found (--include)`, { hint: 'add its directory with -I DIR' });
    if (!visited.has(path)) {
      visited.add(path);
      scan(readHeader(path), path.slice(0, path.lastIndexOf('/')), 1);
    }
  }
  // only the program's preprocessor lines: `#` at the start of a line
  scan(
    programText
      .split('\n')
      .filter((l) => /^\s*#/.test(l))
      .join('\n'),
    undefined,
    0,
  );
  const values = new Map<string, bigint>();
  const evaluating = new Set<string>();
  const value = (name: string): bigint | undefined => {
    if (values.has(name)) return values.get(name);
    const body = bodies.get(name);
    if (body === undefined || body === '' || evaluating.has(name)) return undefined;
    evaluating.add(name);
    const v = evaluate(body, value);
    evaluating.delete(name);
    if (v !== undefined) values.set(name, v);
    return v;
  };
  for (const name of bodies.keys()) value(name);
  return values;
}

/** Macros clang predefines for the host target (bpftrace preprocesses with clang for the host): name → value. */
function predefinedMacros(): Map<string, bigint> {
  const m = new Map<string, bigint>([
    ['__linux__', 1n],
    ['__linux', 1n],
    ['__unix__', 1n],
    ['__LP64__', 1n],
    ['_LP64', 1n],
    ['__CHAR_BIT__', 8n],
    ['__SIZEOF_LONG__', 8n],
    ['__SIZEOF_POINTER__', 8n],
    ['__ORDER_LITTLE_ENDIAN__', 1234n],
    ['__ORDER_BIG_ENDIAN__', 4321n],
    ['__BYTE_ORDER__', 1234n],
  ]);
  if (process.arch === 'x64') for (const n of ['__x86_64__', '__x86_64', '__amd64__', '__amd64']) m.set(n, 1n);
  if (process.arch === 'arm64') m.set('__aarch64__', 1n);
  return m;
}
const PREDEFINED = predefinedMacros();

/**
 * The `#if` nesting of one file: which lines are active. A condition is true, false or unknown (not evaluable): an
 * unknown one keeps its branch active and leaves the later branches of its chain active too (as before conditionals
 * were evaluated: every definition counts).
 */
class Conditionals {
  /** One entry per open `#if`: this branch is active; some earlier branch of the chain was known to be taken. */
  private readonly stack: { active: boolean; taken: boolean; parent: boolean }[] = [];

  constructor(private readonly bodies: ReadonlyMap<string, string>) {}

  get active(): boolean {
    return this.stack.length === 0 || this.stack[this.stack.length - 1]!.active;
  }

  /** Handles a conditional directive line (true), or returns false for any other line. */
  directive(line: string): boolean {
    const d = /^\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)$/.exec(line);
    if (!d) return false;
    const [, kind, rest] = d as unknown as [string, string, string];
    const top = this.stack[this.stack.length - 1];
    if (kind === 'ifdef' || kind === 'ifndef' || kind === 'if') {
      const parent = this.active;
      let c: boolean | undefined;
      if (kind === 'if') c = this.condition(rest);
      else {
        const name = rest.trim().split(/\s/)[0] ?? '';
        c = this.isDefined(name) === (kind === 'ifdef');
      }
      this.stack.push({ active: parent && c !== false, taken: c === true, parent });
    } else if (kind === 'elif' && top) {
      const c = top.taken ? false : this.condition(rest);
      top.active = top.parent && !top.taken && c !== false;
      top.taken ||= c === true;
    } else if (kind === 'else' && top) {
      top.active = top.parent && !top.taken;
      top.taken = true;
    } else if (kind === 'endif') {
      this.stack.pop();
    }
    return true;
  }

  private isDefined(name: string): boolean {
    return this.bodies.has(name) || PREDEFINED.has(name);
  }

  /** An `#if` expression: `defined` replaced, `!`, `&&`, `||`, comparisons and arithmetic; undefined = unknown. */
  private condition(text: string): boolean | undefined {
    const expr = text.replace(
      /\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))/g,
      (_m, a?: string, b?: string) => (this.isDefined((a ?? b)!) ? '1' : '0'),
    );
    const macro = (name: string): bigint | undefined => {
      const p = PREDEFINED.get(name);
      if (p !== undefined) return p;
      const body = this.bodies.get(name);
      if (body === undefined) return /^[A-Za-z_]\w*$/.test(name) ? 0n : undefined; // C: an unknown name is 0
      return evaluate(body, (n) => (n === name ? undefined : macro(n)));
    };
    const v = evaluate(expr, macro, true);
    return v === undefined ? undefined : v !== 0n;
  }
}

function readHeader(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

const U64_MASK = (1n << 64n) - 1n;

/** Value of a C integer constant expression, or undefined for anything else (casts, strings, calls, ...). */
function evaluate(text: string, macro: (name: string) => bigint | undefined, logical = false): bigint | undefined {
  const toks =
    text.match(/0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|<<|>>|&&|\|\||[=!<>]=|[-+*/%()|&^~!<>]|\S/g) ?? [];
  let i = 0;
  const fail = (): never => {
    throw new Error('not an integer expression');
  };
  const primary = (): bigint => {
    const t = toks[i++] ?? fail();
    if (t === '(') {
      const v = binary(-10);
      if (toks[i++] !== ')') fail();
      return v;
    }
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '~') return ~primary() & U64_MASK;
    if (t === '!' && logical) return primary() === 0n ? 1n : 0n;
    if (/^\d/.test(t)) {
      const r = parseIntLiteral(t);
      return 'value' in r ? r.value : fail();
    }
    if (/^[A-Za-z_]/.test(t)) return macro(t) ?? fail();
    return fail();
  };
  // C's precedence; the logical and comparison operators only in `#if` conditions
  const PREC: Record<string, number> = {
    ...(logical ? { '||': -3, '&&': -2, '==': 0.3, '!=': 0.3, '<': 0.6, '>': 0.6, '<=': 0.6, '>=': 0.6 } : {}),
    '|': 1,
    '^': 2,
    '&': 3,
    '<<': 4,
    '>>': 4,
    '+': 5,
    '-': 5,
    '*': 6,
    '/': 6,
    '%': 6,
  };
  const binary = (min: number): bigint => {
    let lhs = primary();
    for (;;) {
      const op = toks[i];
      const p = op !== undefined ? PREC[op] : undefined;
      if (p === undefined || p <= min) return lhs;
      i++;
      const rhs = binary(p);
      switch (op) {
        case '||':
          lhs = lhs !== 0n || rhs !== 0n ? 1n : 0n;
          break;
        case '&&':
          lhs = lhs !== 0n && rhs !== 0n ? 1n : 0n;
          break;
        case '==':
          lhs = lhs === rhs ? 1n : 0n;
          break;
        case '!=':
          lhs = lhs !== rhs ? 1n : 0n;
          break;
        case '<':
          lhs = lhs < rhs ? 1n : 0n;
          break;
        case '>':
          lhs = lhs > rhs ? 1n : 0n;
          break;
        case '<=':
          lhs = lhs <= rhs ? 1n : 0n;
          break;
        case '>=':
          lhs = lhs >= rhs ? 1n : 0n;
          break;
        case '|':
          lhs |= rhs;
          break;
        case '^':
          lhs ^= rhs;
          break;
        case '&':
          lhs &= rhs;
          break;
        case '<<':
          lhs <<= rhs;
          break;
        case '>>':
          lhs >>= rhs;
          break;
        case '+':
          lhs += rhs;
          break;
        case '-':
          lhs -= rhs;
          break;
        case '*':
          lhs *= rhs;
          break;
        case '/':
          if (rhs === 0n) fail();
          lhs /= rhs;
          break;
        case '%':
          if (rhs === 0n) fail();
          lhs %= rhs;
          break;
      }
    }
  };
  try {
    const v = binary(-10);
    return i === toks.length ? v : undefined;
  } catch {
    return undefined;
  }
}
