/**
 * Grammar-aware generation of bpftrace programs for the compile fuzzer (issue 19, campaign item 2): probes of the
 * kinds this machine has (BEGIN/END, interval, profile, tracepoints, raw tracepoints, uprobes of the shell), bodies
 * of statements over builtins, `args` fields, maps, variables, aggregations, printf with right and wrong arguments,
 * casts, control flow; then mutations at the text level (a span deleted, duplicated, or replaced by a token), so
 * that half the programs are nearly valid and reach the analyser and code generator rather than the parser alone.
 */
import fc from 'fast-check';

const PROBES = [
  'BEGIN',
  'END',
  'interval:ms:100',
  'profile:hz:99',
  'tracepoint:syscalls:sys_enter_openat',
  'tracepoint:syscalls:sys_exit_read',
  'tracepoint:sched:sched_switch',
  'tracepoint:syscalls:sys_enter_get*',
  'rawtracepoint:sched_switch',
  'uprobe:libc:getpid',
  'uretprobe:libc:getpid',
  'software:page-faults:100',
];
/** Every body starts by declaring the variables expressions use, so that most programs get past the analyser. */
const PRELUDE = '$x = 1; $y = 2; $s = "s"; $t = (1, "a"); @a = 1; @b = 2; @m[1] = 1; @h = hist(1); @s[1] = 1;';

const INT_BUILTINS = ['pid', 'tid', 'uid', 'gid', 'nsecs', 'elapsed', 'cpu', 'rand', 'cgroup', 'jiffies', 'numaid'];
const ANY_BUILTINS = [...INT_BUILTINS, 'comm', 'probe', 'func', 'kstack', 'ustack', 'curtask', 'retval', 'arg0'];
const ARGS_FIELDS = ['filename', 'flags', 'ret', 'fd', 'count', 'prev_pid', 'next_comm', 'prev_state', 'nope'];
const MAPS = ['@a', '@b', '@m', '@h', '@s'];
const VARS = ['$x', '$y', '$s', '$t'];
const TYPES = ['int8', 'uint16', 'int32', 'uint64', 'int64', 'struct task_struct *', 'char[4]', 'bool'];
const FORMATS = ['%d', '%u', '%s', '%x', '%llu', '%-5d', '%lx', '%c', '%p', '%r', '%%', '%5.2s'];
const TOKENS = ['{', '}', '(', ')', ';', ',', '@', '$', '"', '/', '[', ']', '->', '.', '==', '?', ':', 'if', '0'];

type Arb<T> = fc.Arbitrary<T>;

const intLit: Arb<string> = fc.oneof(
  fc.integer({ min: -3, max: 70 }).map(String),
  fc.constantFrom('0x10', '1_000', '18446744073709551615', '-9223372036854775808', '1e3'),
);
const strLit: Arb<string> = fc.constantFrom('"x"', '""', '"hello"', '"a\\nb"', '"%s"');

/** Expressions, depth-bounded. */
const expr: Arb<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: intLit, weight: 5 },
    { arbitrary: strLit, weight: 1 },
    { arbitrary: fc.constantFrom(...INT_BUILTINS), weight: 5 },
    { arbitrary: fc.constantFrom(...ANY_BUILTINS), weight: 1 },
    { arbitrary: fc.constantFrom('$x', '$y'), weight: 3 },
    { arbitrary: fc.constantFrom(...VARS), weight: 1 },
    { arbitrary: fc.constantFrom('@a', '@b'), weight: 2 },
    { arbitrary: fc.constantFrom(...ARGS_FIELDS).map((f) => `args.${f}`), weight: 1 },
    {
      arbitrary: fc
        .tuple(
          tie('e'),
          fc.constantFrom('+', '-', '*', '/', '%', '&', '|', '^', '<<', '>>', '==', '<', '&&', '||'),
          tie('e'),
        )
        .map(([a, op, b]) => `(${a} ${op} ${b})`),
      weight: 4,
    },
    { arbitrary: tie('e').map((a) => `!${a}`), weight: 1 },
    { arbitrary: tie('e').map((a) => `-(${a})`), weight: 1 },
    { arbitrary: fc.tuple(tie('e'), tie('e'), tie('e')).map(([a, b, c]) => `(${a} ? ${b} : ${c})`), weight: 1 },
    { arbitrary: fc.tuple(fc.constantFrom(...MAPS), tie('e')).map(([m, k]) => `${m}[${k}]`), weight: 1 },
    { arbitrary: fc.tuple(fc.constantFrom(...TYPES), tie('e')).map(([t, a]) => `((${t})${a})`), weight: 1 },
    { arbitrary: fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a}, ${b})`), weight: 1 },
    { arbitrary: tie('e').map((a) => `${a}.0`), weight: 1 },
    { arbitrary: tie('e').map((a) => `${a}->pid`), weight: 1 },
    {
      arbitrary: fc
        .tuple(
          fc.constantFrom('str', 'ksym', 'usym', 'kaddr', 'ntop', 'buf', 'strlen', 'sizeof', 'reg', 'macaddr'),
          tie('e'),
        )
        .map(([f, a]) => `${f}(${a})`),
      weight: 1,
    },
    { arbitrary: fc.tuple(tie('e'), intLit).map(([a, n]) => `str(${a}, ${n})`), weight: 1 },
    { arbitrary: fc.tuple(tie('e'), tie('e')).map(([a, b]) => `strncmp(${a}, ${b}, 3)`), weight: 1 },
  ),
})).e;

/** Predicates: comparisons of builtins with literals (no variables: the body declares them). */
const predicate: Arb<string> = fc
  .tuple(fc.constantFrom(...INT_BUILTINS, 'comm', 'args.fd'), fc.constantFrom('==', '!=', '>', '<'), intLit)
  .map(([b, op, v]) => (b === 'comm' ? `comm ${op === '==' ? '==' : '!='} "sh"` : `${b} ${op} ${v}`));

const aggregation: Arb<string> = fc.oneof(
  fc.constant('count()'),
  expr.map((e) => `sum(${e})`),
  expr.map((e) => `avg(${e})`),
  expr.map((e) => `min(${e})`),
  expr.map((e) => `max(${e})`),
  expr.map((e) => `stats(${e})`),
  expr.map((e) => `hist(${e})`),
  fc.tuple(expr, intLit, intLit, intLit).map(([e, a, b, c]) => `lhist(${e}, ${a}, ${b}, ${c})`),
);

/** Statements, depth-bounded (blocks hold statements). */
const stmt: Arb<string> = fc.letrec<{ s: string }>((tie) => ({
  s: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(fc.constantFrom(...MAPS), expr, expr).map(([m, k, v]) => `${m}[${k}] = ${v};`),
    fc.tuple(fc.constantFrom(...MAPS), aggregation).map(([m, a]) => `${m} = ${a};`),
    fc.tuple(fc.constantFrom(...MAPS), expr, aggregation).map(([m, k, a]) => `${m}[${k}] = ${a};`),
    fc.tuple(fc.constantFrom(...VARS), expr).map(([v, e]) => `${v} = ${e};`),
    fc
      .tuple(fc.constantFrom(...MAPS, ...VARS), fc.constantFrom('++', '--', ' += 2', ' -= 1'))
      .map(([m, o]) => `${m}${o};`),
    fc
      .tuple(fc.array(fc.constantFrom(...FORMATS), { maxLength: 3 }), fc.array(expr, { maxLength: 3 }))
      .map(([f, a]) => `printf("${f.join(' ')}\\n"${a.map((x) => `, ${x}`).join('')});`),
    fc.constantFrom(...MAPS).map((m) => `print(${m});`),
    fc.constantFrom(...MAPS).map((m) => `clear(${m});`),
    fc.tuple(fc.constantFrom(...MAPS), expr).map(([m, k]) => `delete(${m}, ${k});`),
    expr.map((e) => `print(${e});`),
    fc
      .tuple(expr, fc.array(tie('s'), { maxLength: 2 }), fc.array(tie('s'), { maxLength: 2 }))
      .map(([c, y, n]) => `if (${c}) { ${y.join(' ')} } else { ${n.join(' ')} }`),
    fc
      .tuple(fc.integer({ min: 0, max: 5 }), fc.array(tie('s'), { maxLength: 2 }))
      .map(([n, b]) => `unroll(${n}) { ${b.join(' ')} }`),
    fc.array(tie('s'), { maxLength: 2 }).map((b) => `for ($i : 0..3) { ${b.join(' ')} }`),
    fc.array(tie('s'), { maxLength: 2 }).map((b) => `for ($kv : @m) { ${b.join(' ')} }`),
    fc.array(tie('s'), { maxLength: 2 }).map((b) => `while ($x < 3) { $x++; ${b.join(' ')} }`),
    fc.constantFrom('exit();', 'return;', 'break;', 'continue;', 'zero(@a);', 'time("%H\\n");', 'cat("/nonexistent");'),
    fc.tuple(expr).map(([e]) => `@[${e}] = count();`),
    fc.tuple(expr).map(([e]) => `signal(${e});`),
    fc.tuple(expr).map(([e]) => `system("true %d", ${e});`),
  ),
})).s;

const probe: Arb<string> = fc
  .tuple(
    fc.array(fc.constantFrom(...PROBES), { minLength: 1, maxLength: 2 }),
    fc.option(predicate, { nil: undefined, freq: 4 }),
    fc.array(stmt, { maxLength: 4 }),
  )
  .map(([aps, pred, body]) => `${aps.join(', ')}${pred ? ` /${pred}/` : ''} { ${PRELUDE} ${body.join(' ')} }`);

/** A whole program: 1-3 probes, sometimes a config block or a struct definition first. */
export const program: Arb<string> = fc
  .tuple(
    fc.constantFrom('', '', '', 'config = { max_strlen = 16 }\n', 'struct S { int x; char c[4]; }\n'),
    fc.array(probe, { minLength: 1, maxLength: 3 }),
  )
  .map(([head, probes]) => head + probes.join('\n'));

/** A text-level mutation of a program: delete, duplicate or replace a span with a token. */
export const mutated: Arb<string> = fc
  .tuple(program, fc.nat(), fc.nat({ max: 12 }), fc.constantFrom('delete', 'dup', 'token'), fc.constantFrom(...TOKENS))
  .map(([text, at, len, op, tok]) => {
    const i = text.length ? at % text.length : 0;
    const j = Math.min(text.length, i + len);
    if (op === 'delete') return text.slice(0, i) + text.slice(j);
    if (op === 'dup') return text.slice(0, j) + text.slice(i, j) + text.slice(j);
    return `${text.slice(0, i)}${tok}${text.slice(j)}`;
  });

/** Generated programs, half of them mutated. */
export const fuzzProgram: Arb<string> = fc.oneof(program, mutated);
