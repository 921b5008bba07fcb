/**
 * argdist (src/tools/argdist.ts): bcc's -h text and usage errors (test/tools/fixtures/trace-argdist-argparse.json),
 * specifier parsing and errors, the generated program, count/histogram output, and a live run against the workload
 * with a uprobe, uretprobes with $retval/$entry()/$latency and a tracepoint (exact counts and buckets).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildProgram, formatCounts, parseArgdistSpec, SPEC, title } from '../../src/tools/argdist.js';
import { formatHelp, parseArgs } from '../../src/tools/framework/argparse.js';
import { repoRoot } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'trace-argdist-argparse.json'), 'utf8'),
) as { help: Record<string, string>; errors: { tool: string; argv: string[]; status: number; stderr: string }[] };

describe('argdist options', () => {
  it('-h equals argparse on bcc tools/argdist.py', () => {
    assert.equal(formatHelp(SPEC, 78), fixture.help.argdist);
  });

  it('usage errors as argparse prints them', () => {
    for (const c of fixture.errors.filter((e) => e.tool === 'argdist')) {
      assert.throws(
        () => parseArgs(SPEC, c.argv),
        (e: Error & { text?: () => string }) => e.text?.() === c.stderr,
        c.argv.join(' '),
      );
    }
  });
});

describe('argdist specifiers (bcc Probe.__init__)', () => {
  it('parts, defaults and labels', () => {
    const p = parseArgdistSpec('freq', 'p:c:write(int fd, const void *buf, size_t count):size_t,int:count,fd:fd==1#w');
    assert.deepEqual(
      [p.type, p.library, p.function, p.types, p.exprs, p.filter, p.label, p.isDefaultExpr],
      ['p', 'c', 'write', ['size_t', 'int'], ['count', 'fd'], 'fd==1', 'w', false],
    );
    assert.deepEqual(
      p.params.map((q) => q.name),
      ['fd', 'buf', 'count'],
    );
    const r = parseArgdistSpec('hist', 'r:c:read()');
    assert.deepEqual([r.types, r.exprs, r.isDefaultExpr, title(r)], [['int'], ['$retval'], true, 'retval']);
    const c = parseArgdistSpec('freq', 'p:c:fork()');
    assert.deepEqual([c.types, c.exprs, title(c)], [['u64'], ['1'], 'p:c:fork()']);
    assert.equal(title(parseArgdistSpec('hist', 'r::f(size_t n):u64:$latency/$entry(n)')), '$latency/n');
  });

  it("bcc's errors", () => {
    const err = (kind: 'freq' | 'hist', s: string, reason: string): void =>
      assert.throws(() => parseArgdistSpec(kind, s), { message: `error parsing probe '${s}': ${reason}` });
    err('freq', 'p:c', 'at least the probe type, library, and function signature must be specified');
    err('freq', 'p:c:f():a:b:c:d', "extraneous ':'-separated parts detected");
    err('freq', 'x:c:f()', "probe type must be 'p', 'r', 't', or 'u' but got 'x'");
    err('freq', 'p:c:f', "function signature 'f' has an invalid format");
    err('freq', 'p:c:f():u64,u64:a', 'mismatched # of exprs and types');
    err('hist', 'p:c:f():u64,u64:a,b', 'histograms can only have 1 expr');
    err('hist', 'p:c:f()', 'histograms must have expr');
  });

  it('generates a count map per probe and entry probes for $entry/$latency', () => {
    const probes = [
      parseArgdistSpec('freq', 'p:/bin/x:f(int fd, char *s):char*,int:s,fd:fd==1'),
      parseArgdistSpec('hist', 'r:/bin/x:f(int fd):u32:$latency:$entry(fd) > 2'),
    ];
    const prog = buildProgram(
      probes,
      { pid: 7, stringSize: 40 },
      (p, entry) => `${entry || p.type === 'p' ? 'uprobe' : 'uretprobe'}:/bin/x:f`,
    );
    assert.equal(
      prog,
      'config = { max_map_keys = 10240 }\n' +
        'uprobe:/bin/x:f /(pid == 7) && (((int32)arg0)==1)/ {\n  @p0[str((arg1), 40), (int32)(((int32)arg0))] = count();\n}\n' +
        'uprobe:/bin/x:f /pid == 7/ {\n  @p1_fd[tid] = arg0;\n  @p1_ts[tid] = nsecs;\n}\n' +
        'uretprobe:/bin/x:f /(pid == 7) && (has_key(@p1_ts, tid))/ {\n' +
        '  if (((int32)@p1_fd[tid]) > 2) {\n    @p1 = hist((uint32)((nsecs - @p1_ts[tid])));\n  }\n' +
        '  delete(@p1_fd, tid);\n  delete(@p1_ts, tid);\n}\n',
    );
  });

  it('count output: title, COUNT/EVENT, ascending by count, -T keeps the last rows', () => {
    const p = parseArgdistSpec('freq', 'p:c:write(int fd):int:fd');
    const rows = [
      { key: [2n], count: 5n },
      { key: [1n], count: 9n },
      { key: [0n], count: 1n },
    ];
    assert.equal(
      formatCounts(p, rows, null),
      'p:c:write(int fd):int:fd\n\tCOUNT      EVENT\n\t1          fd = 0\n\t5          fd = 2\n\t9          fd = 1\n',
    );
    assert.equal(formatCounts(p, rows, 1), 'p:c:write(int fd):int:fd\n\tCOUNT      EVENT\n\t9          fd = 1\n');
    const r = parseArgdistSpec('freq', 'r:c:read()#reads');
    assert.equal(
      formatCounts(r, [{ key: [-1n], count: 2n }], null),
      'reads\n\tCOUNT      EVENT\n\t2          retval = -1\n',
    );
    const d = parseArgdistSpec('freq', 'p:c:fork()');
    assert.equal(
      formatCounts(d, [{ key: [1n], count: 3n }], null),
      'p:c:fork()\n\tCOUNT      EVENT\n\t3          total calls\n',
    );
  });
});

describe('argdist on the live kernel', () => {
  const skip = liveSkipReason();

  it('counts, histograms, $entry/$retval/$latency on the workload: exact values', { skip }, async () => {
    const w = workloadPath();
    const target = spawn(w, ['wait-stdin', 'getppid', 3, 'args6', 1, 2, 3, 4, 5, 6].map(String), {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => target.on('close', (c) => resolve(c)));
    const specs = [
      '-C',
      `p:${w}:num(const char *s):char*:s`,
      '-C',
      't:syscalls:sys_enter_getppid():u64:args->__syscall_nr#getppid calls',
      '-C',
      `r:${w}:num(const char *s):char*,int:$entry(s),$retval:$retval>4`,
      '-H',
      `r:${w}:num():long:$retval`,
      '-H',
      `r:${w}:num():u64:$latency#latency`,
    ];
    const run = startBpfscope(['argdist', '-c', '-p', String(target.pid), ...specs], { timeoutMs: 60_000 });
    const header = /^\[\d\d:\d\d:\d\d\]$/gm;
    try {
      assert.ok(await run.waitFor(header, 45_000), run.stderr());
      target.stdin!.end('x');
      assert.equal(await exited, 0);
      // -c: every interval printed after the workload ended holds all of its events.
      const seen = (run.stdout().match(header) ?? []).length;
      assert.ok(await run.waitFor(new RegExp(`(^\\[\\d\\d:\\d\\d:\\d\\d\\]$[^]*){${seen + 2}}`, 'm'), 20_000));
    } finally {
      target.kill('SIGKILL');
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const blocks = r.stdout.split(header);
    const last = blocks[blocks.length - 2]!;
    const lat = last.indexOf('     latency ');
    assert.ok(lat > 0, last);
    assert.equal(
      last.slice(0, lat),
      `\np:${w}:num(const char *s):char*:s\n\tCOUNT      EVENT\n` +
        '\t1          s = 1\n\t1          s = 2\n\t1          s = 4\n\t1          s = 5\n\t1          s = 6\n\t2          s = 3\n' +
        'getppid calls\n\tCOUNT      EVENT\n\t3          args->__syscall_nr = 110\n' +
        `r:${w}:num(const char *s):char*,int:$entry(s),$retval:$retval>4\n\tCOUNT      EVENT\n` +
        '\t1          s = 5, $retval = 5\n\t1          s = 6, $retval = 6\n' +
        '     $retval             : count     distribution\n' +
        '         0 -> 1          : 1        |*************                           |\n' +
        '         2 -> 3          : 3        |****************************************|\n' +
        '         4 -> 7          : 3        |****************************************|\n',
    );
    // Seven calls of num, each timed: the latency histogram's counts add up to 7.
    const counts = [...last.slice(lat).matchAll(/: (\d+) +\|/g)].map((m) => Number(m[1]));
    assert.equal(
      counts.reduce((x, y) => x + y, 0),
      7,
      last,
    );
  });

  it('no specifier: bcc prints "at least one specifier is required" and exits 1', { skip }, async () => {
    const r = await runBpfscope(['argdist']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'at least one specifier is required\n');
  });
});
