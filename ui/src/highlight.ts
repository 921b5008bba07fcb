/**
 * A small bpftrace syntax highlighter for the one-liner editor: comments, strings, numbers, probe types, keywords,
 * builtins and functions, @maps and $variables; plus the spans of compile errors. Returns runs of text with a class.
 */
const KEYWORDS = new Set([
  'if',
  'else',
  'unroll',
  'while',
  'for',
  'return',
  'let',
  'config',
  'import',
  'macro',
  'break',
  'continue',
  'sizeof',
  'offsetof',
]);
const PROBES = new Set([
  'BEGIN',
  'END',
  'kprobe',
  'kretprobe',
  'uprobe',
  'uretprobe',
  'tracepoint',
  'rawtracepoint',
  'usdt',
  'profile',
  'interval',
  'software',
  'hardware',
  'watchpoint',
  'fentry',
  'fexit',
  'kfunc',
  'kretfunc',
  'iter',
  'self',
  'k',
  'kr',
  'u',
  'ur',
  't',
  'rt',
  'U',
  'p',
  'i',
  's',
  'h',
  'w',
  'f',
  'fr',
]);
const BUILTINS = new Set([
  'pid',
  'tid',
  'uid',
  'gid',
  'nsecs',
  'elapsed',
  'numaid',
  'cpu',
  'comm',
  'kstack',
  'ustack',
  'arg0',
  'arg1',
  'arg2',
  'arg3',
  'arg4',
  'arg5',
  'arg6',
  'arg7',
  'arg8',
  'arg9',
  'sarg0',
  'sarg1',
  'sarg2',
  'retval',
  'func',
  'probe',
  'curtask',
  'rand',
  'cgroup',
  'cpid',
  'args',
  'username',
  'jiffies',
  'ncpus',
  'usermode',
  'ctx',
]);
const FUNCTIONS = new Set([
  'printf',
  'print',
  'time',
  'join',
  'str',
  'buf',
  'ksym',
  'usym',
  'kaddr',
  'uaddr',
  'reg',
  'system',
  'exit',
  'cat',
  'signal',
  'strncmp',
  'strcontains',
  'override',
  'ntop',
  'pton',
  'kptr',
  'uptr',
  'cgroupid',
  'macaddr',
  'count',
  'sum',
  'avg',
  'min',
  'max',
  'stats',
  'hist',
  'lhist',
  'delete',
  'clear',
  'zero',
  'len',
  'has_key',
  'errorf',
  'warnf',
  'debugf',
  'strftime',
  'path',
  'skboutput',
  'nsecs',
  'bswap',
  'offsetof',
  'percpu_kaddr',
  'unwatch',
]);

export type Cls =
  'plain' | 'comment' | 'string' | 'number' | 'keyword' | 'probe' | 'builtin' | 'function' | 'map' | 'var' | 'punct';

export interface Run {
  text: string;
  cls: Cls;
  /** Part of a compile error's span. */
  error: boolean;
}

/** Classes of each character of `src`. */
function classify(src: string): Cls[] {
  const cls: Cls[] = new Array<Cls>(src.length).fill('plain');
  const set = (a: number, b: number, c: Cls): void => {
    for (let k = a; k < b; k++) cls[k] = c;
  };
  let i = 0;
  let braces = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === '/' && src[i + 1] === '/') {
      const e = src.indexOf('\n', i);
      const end = e < 0 ? src.length : e;
      set(i, end, 'comment');
      i = end;
    } else if (c === '/' && src[i + 1] === '*') {
      const e = src.indexOf('*/', i + 2);
      const end = e < 0 ? src.length : e + 2;
      set(i, end, 'comment');
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"' && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
      const end = Math.min(src.length, j + 1);
      set(i, end, 'string');
      i = end;
    } else if (/[0-9]/.test(c)) {
      const m = /^(0x[0-9a-fA-F]+|\d[\d_]*(\.\d+)?([eE]\d+)?)/.exec(src.slice(i, i + 40));
      const n = m ? m[0].length : 1;
      set(i, i + n, 'number');
      i += n;
    } else if (c === '@' || c === '$') {
      const m = /^[@$][A-Za-z0-9_]*/.exec(src.slice(i, i + 256));
      const n = m ? m[0].length : 1;
      set(i, i + n, c === '@' ? 'map' : 'var');
      i += n;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 256))!;
      const w = m[0];
      const next = src.slice(i + w.length).match(/^\s*(.)/)?.[1];
      let k: Cls = 'plain';
      if (braces === 0 && PROBES.has(w) && (next === ':' || w === 'BEGIN' || w === 'END')) k = 'probe';
      else if (KEYWORDS.has(w)) k = 'keyword';
      else if (next === '(' && FUNCTIONS.has(w)) k = 'function';
      else if (BUILTINS.has(w)) k = 'builtin';
      set(i, i + w.length, k);
      i += w.length;
    } else {
      if (c === '{') braces++;
      else if (c === '}') braces = Math.max(0, braces - 1);
      if ('{}()[];,'.includes(c)) cls[i] = 'punct';
      i++;
    }
  }
  return cls;
}

/** Runs of `src` with their class, `errors` (offset ranges, end exclusive) marked. */
export function highlight(src: string, errors: readonly { offset: number; end: number }[] = []): Run[] {
  // a program larger than the server compiles is not worth colouring
  if (src.length > 65536) return [{ text: `${src.slice(0, 65536)}…`, cls: 'plain', error: false }];
  const cls = classify(src);
  const err = new Array<boolean>(src.length).fill(false);
  for (const e of errors) {
    // an empty span (at the end of the input) marks the character before it
    const a = Math.max(0, Math.min(e.offset, src.length - 1));
    const b = Math.max(a + 1, Math.min(e.end, src.length));
    for (let k = a; k < b; k++) err[k] = true;
  }
  const runs: Run[] = [];
  let start = 0;
  for (let k = 1; k <= src.length; k++) {
    if (k === src.length || cls[k] !== cls[start] || err[k] !== err[start]) {
      runs.push({ text: src.slice(start, k), cls: cls[start]!, error: err[start]! });
      start = k;
    }
  }
  return runs;
}
