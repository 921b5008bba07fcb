/**
 * Golden BPF disassembly (as bpftrace's tests/codegen): each program of test/codegen/golden/NAME.bt is compiled
 * all the way to the instructions the kernel would load (parse, analysis, code generation, peephole, register
 * allocation, emission; nothing is loaded) against a fixed fake machine ({@link GOLDEN_TARGET}), and its
 * disassembly must equal test/codegen/golden/NAME.txt. A change in code generation shows as a diff of those files:
 * review it and re-record with `npm run golden:regen` (BPFSCOPE_GOLDEN_REGEN=1 makes this file write them).
 *
 * A `.bt` file may start with `// @positional A B` (positional parameters) and `// @unsafe`; `{{WORKLOAD}}` stands
 * for the test workload (test/fixtures/workload.c, compiled with cc; written back as `{{WORKLOAD}}` in the listing).
 * Host facts outside the Target interface are still read from this machine: tracefs formats of the syscalls
 * tracepoints (stable across kernels) and the workload's ELF symbols, so those programs are skipped, saying why,
 * where tracefs is not mounted or there is no cc.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { disassemble } from '../../src/bpf/disasm.js';
import { compile } from '../../src/compiler.js';
import type { Target } from '../../src/lang/target.js';
import { link } from '../../src/runtime/loader.js';
import { repoRoot } from '../helpers/cli.js';
import { ccSkipReason } from '../helpers/compile.js';
import { workloadPath } from '../helpers/workload.js';

const DIR = join(repoRoot(), 'test', 'codegen', 'golden');
const REGEN = process.env.BPFSCOPE_GOLDEN_REGEN === '1';

/** A machine that is not this one: 4 CPUs, the initial PID namespace, no kernel symbols or cgroups. */
const GOLDEN_TARGET: Target = {
  onlineCpus: () => [0, 1, 2, 3],
  possibleCpus: () => [0, 1, 2, 3],
  pidNamespace: () => null,
  kernelSymbolAddress: () => undefined,
  cgroupId: () => undefined,
  resolveUaddr: (_probe, symbol) => `no uaddr for ${symbol} on the golden target`,
};

/** Map fds in the listing: 1000 + the map's index in order of first reference, printed back as `map[NAME]`. */
const FD_BASE = 1000;

/** The golden text of a program: per probe, a header line and the numbered instructions (`pc: (op) insn`). */
export function goldenDisassembly(text: string, positional: string[], unsafe: boolean): string {
  const r = compile({ name: 'stdin', text }, { target: GOLDEN_TARGET, positional, ...(unsafe ? { unsafe } : {}) });
  const out: string[] = [];
  for (const plan of r.compiled.programs) {
    const maps: string[] = [];
    const fd = (name: string) => {
      if (!maps.includes(name)) maps.push(name);
      return FD_BASE + maps.indexOf(name);
    };
    const { insns } = link(plan, fd);
    out.push(`; ${plan.expanded.name} (${plan.kernelName}): ${insns.length} slots`);
    out.push(
      ...disassemble(insns, {
        pc: true,
        opcodes: true,
        mapRef: (i) => `map[${maps[i.imm - FD_BASE] ?? `fd:${i.imm}`}]`,
      }),
    );
  }
  return `${out.join('\n')}\n`;
}

function directives(text: string): { positional: string[]; unsafe: boolean } {
  const pos = /^\/\/ @positional (.*)$/m.exec(text);
  return { positional: pos ? pos[1]!.split(' ') : [], unsafe: /^\/\/ @unsafe$/m.test(text) };
}

const tracefs = existsSync('/sys/kernel/tracing/events/syscalls');
const names = readdirSync(DIR)
  .filter((n) => n.endsWith('.bt'))
  .map((n) => n.slice(0, -3))
  .sort();

describe('golden BPF disassembly (test/codegen/golden)', () => {
  it('has a program and a recorded listing for each other', () => {
    assert.ok(names.length >= 20, `only ${names.length} programs`);
    for (const f of readdirSync(DIR)) {
      const m = /^(.*)\.(bt|txt)$/.exec(f);
      assert.ok(m, `test/codegen/golden/${f}: not NAME.bt or NAME.txt`);
      assert.ok(names.includes(m[1]!), `test/codegen/golden/${f} has no ${m[1]}.bt`);
    }
  });

  for (const name of names) {
    it(name, (t) => {
      const text = readFileSync(join(DIR, `${name}.bt`), 'utf8');
      if (/\btracepoint:/.test(text) && !tracefs) return t.skip('tracefs is not mounted (tracepoint formats)');
      const usesWorkload = text.includes('{{WORKLOAD}}');
      const noCc = usesWorkload ? ccSkipReason() : undefined;
      if (noCc) return t.skip(`${noCc}: the program probes the test workload`);
      const { positional, unsafe } = directives(text);
      const wl = usesWorkload ? workloadPath() : '{{WORKLOAD}}';
      const got = goldenDisassembly(text.split('{{WORKLOAD}}').join(wl), positional, unsafe)
        .split(wl)
        .join('{{WORKLOAD}}');
      const file = join(DIR, `${name}.txt`);
      if (REGEN) writeFileSync(file, got);
      assert.ok(existsSync(file), `no ${name}.txt: run \`npm run golden:regen\` and review it`);
      assert.equal(
        got,
        readFileSync(file, 'utf8'),
        `the code generated for test/codegen/golden/${name}.bt changed: review, then \`npm run golden:regen\``,
      );
    });
  }
});
