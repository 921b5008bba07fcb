/**
 * Integer constants from C preprocessor definitions, the part of bpftrace's clang preprocessing that programs use
 * most: `#define NAME VALUE` lines in the program and in the headers it includes (`#include <errno.h>`, or
 * bpftrace's `--include FILE`, which is `#include <FILE>` before the program), so that `strerror(EPERM)` or
 * `_MY_LIMIT` read as numbers. bpfscope has no C preprocessor: only object-like macros whose value is an integer
 * expression (literals, other such macros, parentheses, unary and binary arithmetic) are kept, conditionals
 * (`#if`/`#ifdef`) are not evaluated (every definition counts, the first one of a name wins), and function-like
 * macros are skipped. Headers are searched in the `-I` directories, then `/usr/local/include`, the multiarch
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
    for (const line of clean.split('\n')) {
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

function readHeader(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

const U64_MASK = (1n << 64n) - 1n;

/** Value of a C integer constant expression, or undefined for anything else (casts, strings, calls, ...). */
function evaluate(text: string, macro: (name: string) => bigint | undefined): bigint | undefined {
  const toks = text.match(/0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|<<|>>|[-+*/%()|&^~]|\S/g) ?? [];
  let i = 0;
  const fail = (): never => {
    throw new Error('not an integer expression');
  };
  const primary = (): bigint => {
    const t = toks[i++] ?? fail();
    if (t === '(') {
      const v = binary(0);
      if (toks[i++] !== ')') fail();
      return v;
    }
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '~') return ~primary() & U64_MASK;
    if (/^\d/.test(t)) {
      const r = parseIntLiteral(t);
      return 'value' in r ? r.value : fail();
    }
    if (/^[A-Za-z_]/.test(t)) return macro(t) ?? fail();
    return fail();
  };
  const PREC: Record<string, number> = {
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
    const v = binary(0);
    return i === toks.length ? v : undefined;
  } catch {
    return undefined;
  }
}
