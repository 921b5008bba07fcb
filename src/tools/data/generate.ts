/**
 * Generates `src/kernel/syscalls.ts` (system call number → name for x86-64 and aarch64) and `errno.ts` (errno names) from the
 * kernel UAPI headers that `linux-libc-dev` installs:
 * - x86-64: `/usr/include/x86_64-linux-gnu/asm/unistd_64.h` (`#define __NR_<name> <nr>`);
 * - aarch64: `/usr/include/asm-generic/unistd.h`, the table arm64 includes, evaluated as a 64-bit build with the
 *   `__ARCH_WANT_*` macros arm64's `uapi/asm/unistd.h` defines (see {@link AARCH64_DEFINES});
 * - errno: `/usr/include/asm-generic/errno-base.h` and `errno.h` (shared by x86-64 and arm64).
 *
 * Run from the repository root: `npx tsx src/tools/data/generate.ts` (rewrites the two files). `parse*` are
 * exported for the test that checks the committed tables against the installed headers.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const X86_64_HEADER = '/usr/include/x86_64-linux-gnu/asm/unistd_64.h';
export const GENERIC_HEADER = '/usr/include/asm-generic/unistd.h';
export const ERRNO_HEADERS = ['/usr/include/asm-generic/errno-base.h', '/usr/include/asm-generic/errno.h'];

/** What arm64's `arch/arm64/include/uapi/asm/unistd.h` defines before including asm-generic/unistd.h. */
export const AARCH64_DEFINES = [
  '__ARCH_WANT_RENAMEAT',
  '__ARCH_WANT_NEW_STAT',
  '__ARCH_WANT_SET_GET_RLIMIT',
  '__ARCH_WANT_TIME32_SYSCALLS',
  '__ARCH_WANT_SYS_CLONE3',
  '__ARCH_WANT_MEMFD_SECRET',
];

/** `#define __NR_<name> <number>` lines of an arch header → number → name. */
export function parseUnistd64(text: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const m of text.matchAll(/^#define\s+__NR_(\w+)\s+(\d+)\s*$/gm)) out.set(Number(m[2]), m[1]!);
  return out;
}

/** Evaluate a `#if` expression of asm-generic/unistd.h: `defined(X)`, `!`, `&&`, `||`, `==`, `!=`, integers. */
function evalCondition(expr: string, defined: Map<string, string>): boolean {
  const tokens = expr
    .replace(/\/\*.*?\*\//g, ' ')
    .match(/defined\s*\(\s*\w+\s*\)|defined\s+\w+|&&|\|\||==|!=|!|\(|\)|\w+/g);
  if (!tokens) throw new Error(`cannot evaluate #if ${expr}`);
  let pos = 0;
  const value = (tok: string): number => {
    const d = /^defined\s*\(?\s*(\w+)\s*\)?$/.exec(tok);
    if (d) return defined.has(d[1]!) ? 1 : 0;
    if (/^\d+$/.test(tok)) return Number(tok);
    const v = defined.get(tok);
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : 0;
  };
  const primary = (): number => {
    const t = tokens[pos++]!;
    if (t === '!') return primary() ? 0 : 1;
    if (t === '(') {
      const v = or();
      pos++; // ')'
      return v;
    }
    return value(t);
  };
  const eq = (): number => {
    let v = primary();
    while (tokens[pos] === '==' || tokens[pos] === '!=') {
      const op = tokens[pos++];
      const r = primary();
      v = (op === '==' ? v === r : v !== r) ? 1 : 0;
    }
    return v;
  };
  const and = (): number => {
    let v = eq();
    while (tokens[pos] === '&&') {
      pos++;
      const r = eq();
      v = v && r ? 1 : 0;
    }
    return v;
  };
  const or = (): number => {
    let v = and();
    while (tokens[pos] === '||') {
      pos++;
      const r = and();
      v = v || r ? 1 : 0;
    }
    return v;
  };
  return or() !== 0;
}

/**
 * asm-generic/unistd.h evaluated for a 64-bit architecture defining `archDefines`: number → name, resolving the
 * `__NR3264_*` aliases (`__NR_fcntl __NR3264_fcntl`, `__NR_newfstatat __NR3264_fstatat`, ...).
 */
export function parseGenericUnistd(text: string, archDefines: string[]): Map<number, string> {
  const defined = new Map<string, string>([['__BITS_PER_LONG', '64']]);
  for (const d of archDefines) defined.set(d, '1');
  const stack: { active: boolean; taken: boolean }[] = [];
  const active = (): boolean => stack.every((s) => s.active);
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const ifm = /^#\s*if(n?def)?\s+(.*)$/.exec(line);
    if (ifm) {
      const kind = ifm[1];
      const arg = ifm[2]!.replace(/\/\*.*?\*\//g, '').trim();
      const cond =
        kind === 'def' ? defined.has(arg) : kind === 'ndef' ? !defined.has(arg) : evalCondition(arg, defined);
      stack.push({ active: cond, taken: cond });
      continue;
    }
    if (/^#\s*else\b/.test(line)) {
      const top = stack[stack.length - 1]!;
      top.active = !top.taken;
      top.taken = true;
      continue;
    }
    const elif = /^#\s*elif\s+(.*)$/.exec(line);
    if (elif) {
      const top = stack[stack.length - 1]!;
      const cond = !top.taken && evalCondition(elif[1]!, defined);
      top.active = cond;
      top.taken ||= cond;
      continue;
    }
    if (/^#\s*endif\b/.test(line)) {
      stack.pop();
      continue;
    }
    if (!active()) continue;
    const def = /^#\s*define\s+(\w+)(?:\s+(.*?))?\s*(?:\/\*.*)?$/.exec(line);
    if (def) {
      defined.set(def[1]!, (def[2] ?? '').trim());
      continue;
    }
    const undef = /^#\s*undef\s+(\w+)/.exec(line);
    if (undef) defined.delete(undef[1]!);
  }
  const out = new Map<number, string>();
  for (const [name, value] of defined) {
    if (!name.startsWith('__NR_') || name === '__NR_syscalls') continue;
    let v = value;
    for (let i = 0; i < 4 && !/^\d+$/.test(v); i++) v = defined.get(v) ?? '';
    if (/^\d+$/.test(v)) out.set(Number(v), name.slice(5));
  }
  return out;
}

/** `#define E<NAME> <number>` (and aliases like `#define EWOULDBLOCK EAGAIN`) → name → number. */
export function parseErrno(texts: string[]): Map<string, number> {
  const raw = new Map<string, string>();
  for (const t of texts) for (const m of t.matchAll(/^#define\s+(E\w+)\s+(\w+)/gm)) raw.set(m[1]!, m[2]!);
  const out = new Map<string, number>();
  for (const [name, v] of raw) {
    const n = /^\d+$/.test(v) ? Number(v) : Number(raw.get(v));
    if (Number.isInteger(n)) out.set(name, n);
  }
  return out;
}

function tableSource(name: string, doc: string, m: Map<number, string>): string {
  const rows = [...m.entries()].sort((a, b) => a[0] - b[0]).map(([n, s]) => `  ${n}: '${s}',`);
  return `/** ${doc} */\nexport const ${name}: Readonly<Record<number, string>> = {\n${rows.join('\n')}\n};\n`;
}

function main(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const x86 = parseUnistd64(readFileSync(X86_64_HEADER, 'utf8'));
  const arm = parseGenericUnistd(readFileSync(GENERIC_HEADER, 'utf8'), AARCH64_DEFINES);
  const header = `/**
 * System call names by number, generated by \`src/tools/data/generate.ts\` from the kernel UAPI headers of
 * linux-libc-dev (${X86_64_HEADER} for x86-64; ${GENERIC_HEADER} evaluated with arm64's __ARCH_WANT_* macros for
 * aarch64). Do not edit by hand: rerun the generator. Numbers missing here print as bcc prints them,
 * \`[unknown: N]\`.
 */
`;
  writeFileSync(
    join(here, '..', '..', 'kernel', 'syscalls.ts'),
    `${header}\n${tableSource('SYSCALLS_X86_64', 'x86-64 (64-bit ABI) system calls.', x86)}\n${tableSource('SYSCALLS_AARCH64', 'aarch64 system calls.', arm)}`,
  );
  const errno = parseErrno(ERRNO_HEADERS.map((f) => readFileSync(f, 'utf8')));
  const rows = [...errno.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
  writeFileSync(
    join(here, 'errno.ts'),
    `/**
 * errno names → numbers, generated by \`src/tools/data/generate.ts\` from ${ERRNO_HEADERS.join(' and ')}
 * (linux-libc-dev; the same numbers on x86-64 and aarch64), aliases included. Do not edit by hand.
 */
export const ERRNO: Readonly<Record<string, number>> = {
${rows.map(([n, v]) => `  ${n}: ${v},`).join('\n')}
};
`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
