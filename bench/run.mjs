#!/usr/bin/env node
/**
 * bpfscope's benchmarks against its peers (issue 4): bpftrace 0.17 and Debian's bpfcc-tools, side by side in one run.
 *
 *   node bench/run.mjs [all|startup|overhead|streaming|memory|tools|cpuprof|flame ...] [--rounds N]
 *                      [--tools a,b,c] [--no-readme]
 *
 * Needs root and a built bpfscope (`npm run build`). Installs missing peers with apt-get, builds bench/c/*.c with
 * `cc -O2` into bench/.build/. Each sub-command replaces its section of bench/results/latest.json, then
 * bench/results/latest.md is rendered from all sections and copied into bench/README.md between the
 * `<!-- results:begin -->` / `<!-- results:end -->` markers. Benchmarks are never part of `npm test`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCpuProf } from './lib/cpuprof.mjs';
import {
  BENCH_DIR,
  buildHelpers,
  checkBuilt,
  ensurePeers,
  loadSnapshot,
  machineInfo,
  RESULTS_DIR,
  snapshotDist,
} from './lib/env.mjs';
import { FLAME_SCRIPT, runFlame } from './lib/flame.mjs';
import { runMemory } from './lib/memory.mjs';
import { inspect, runOverhead } from './lib/overhead.mjs';
import { runStartup } from './lib/startup.mjs';
import { markdownTable, num, plainTable, summarize } from './lib/stats.mjs';
import { runStreaming } from './lib/streaming.mjs';
import { runTools } from './lib/tools.mjs';

const ORDER = ['startup', 'overhead', 'streaming', 'memory', 'tools', 'cpuprof', 'flame'];
const TITLES = {
  startup: 'Startup',
  overhead: 'Per-event overhead',
  streaming: 'Event streaming',
  memory: 'Memory',
  tools: 'Tools: launch to first line',
  cpuprof: 'Where bpfscope spends its time (node --cpu-prof)',
  flame: 'Flame graphs',
};
const PEER = {
  startup: 'bpftrace',
  overhead: 'bpftrace',
  streaming: 'bpftrace',
  memory: 'bpftrace',
  tools: 'bcc',
  flame: 'Perl',
};

const log = (s) => process.stderr.write(`${s}\n`);

function parseArgs(argv) {
  const o = { sections: [], rounds: 5, readme: true, tools: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rounds') o.rounds = Number(argv[++i]);
    else if (a === '--no-readme') o.readme = false;
    else if (a === '--render') o.render = true;
    else if (a === '--tools') o.tools = argv[++i].split(',');
    else if (a === 'all') o.sections.push(...ORDER);
    else if (ORDER.includes(a)) o.sections.push(a);
    else if (a === '-h' || a === '--help') {
      process.stdout.write(
        `usage: node bench/run.mjs [all|${ORDER.join('|')} ...] [--rounds N] [--tools a,b] [--no-readme] [--render]\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!o.sections.length) o.sections.push(...ORDER);
  if (!(o.rounds >= 1)) throw new Error('--rounds needs a positive number');
  o.sections = ORDER.filter((s) => o.sections.includes(s));
  return o;
}

// This development sandbox exports NODE_EXTRA_CA_CERTS: every node process then parses a CA bundle before running
// any JavaScript (~40-60 ms, ~2 MB). sudo clears it for users and bpftrace/bcc ignore it, so every run here is
// made without it (bench/README.md, Method).
delete process.env.NODE_EXTRA_CA_CERTS;

function loadResults() {
  const p = join(RESULTS_DIR, 'latest.json');
  if (!existsSync(p)) return { sections: {} };
  try {
    return JSON.parse(readFileSync(p, 'utf8'));
  } catch {
    return { sections: {} };
  }
}

async function runSection(name, o, ctx) {
  const rounds = o.rounds;
  switch (name) {
    case 'startup': {
      const r = await runStartup({ rounds, log });
      ctx.startupMemoryRows = r.memoryRows;
      return { rows: r.rows, raw: r.raw };
    }
    case 'overhead': {
      const r = await runOverhead({ rounds, log });
      log('  inspecting xlated programs');
      const codegen = await inspect({ log });
      return { rows: r.rows, raw: r.raw, floorRows: r.floorRows, codegen, n: r.n };
    }
    case 'streaming': {
      const r = await runStreaming({ rounds, log });
      return { rows: r.rows, raw: r.raw, seconds: r.seconds };
    }
    case 'memory': {
      const r = await runMemory({ rounds, log, startupMemoryRows: ctx.startupMemoryRows });
      return { rows: r.rows, raw: r.raw };
    }
    case 'tools': {
      const r = await runTools({ rounds, log, only: o.tools });
      return {
        rows: r.rows,
        raw: r.raw,
        failed: r.failed,
        lacks: r.lacks,
        oursFailed: r.oursFailed,
        noBcc: r.noBcc,
        ours: r.ours,
        firstLines: r.firstLines,
        headersNote: r.headersNote,
        args: r.args,
      };
    }
    case 'cpuprof':
      return { rows: [], profile: await runCpuProf({ log }) };
    case 'flame': {
      const r = await runFlame({ rounds, log });
      if (!r) {
        log(`  ${FLAME_SCRIPT} does not exist yet: skipped`);
        return null;
      }
      return { rows: r.rows, markdown: r.markdown, exitCode: r.exitCode };
    }
  }
  return null;
}

function machineLine(m) {
  return (
    `${m.host}: ${m.cpu}, ${m.memGiB} GiB, Linux ${m.kernel} (${m.os}); Node ${m.node}; ${m.bpftrace ?? 'no bpftrace'}; ` +
    `${m.bcc ?? 'no bcc'}; bpfscope ${m.bpfscopeCommit}${m.bpfscopeDirty ? ' + uncommitted changes in src/' : ''}`
  );
}

function renderSection(name, s) {
  const out = [`### ${TITLES[name]}`, ''];
  out.push(
    `Run ${s.date} on ${machineLine(s.machine)}. ${s.rounds} rounds, ${s.durationS} s; load average ` +
      `${s.load.before.loadavg1} before, ${s.load.after.loadavg1} after; ${s.load.before.bpfProgsLoaded} BPF ` +
      'programs loaded by others at the start.',
    '',
  );
  if (s.rows?.length) out.push(markdownTable(s.rows, PEER[name] ?? 'peer'), '');
  if (name === 'overhead') {
    out.push(
      `Workload: ${s.n.toLocaleString('en-US')} getppid calls; ns per call is the median over 10,000-call chunks; ` +
        'added = traced - untraced in the same round. Every program but the first is filtered with `/pid == cpid/`.',
      '',
    );
    const fr = s.floorRows ?? [];
    const ids = [...new Set(fr.map((r) => r.id))];
    out.push(
      '**Ratio of added ns to the floor (the filtered empty probe)**; target for `@ = count()`: <= 1.3x.',
      '',
      plainTable(
        ['program', 'bpfscope', 'bpftrace'],
        ids.map((id) => {
          const a = fr.find((r) => r.id === id && r.tool === 'bpfscope');
          const b = fr.find((r) => r.id === id && r.tool === 'bpftrace');
          const f = (x) => (x?.ratio === null || x?.ratio === undefined ? '–' : `${x.ratio.toFixed(2)}x`);
          return [a?.title ?? b?.title, f(a), f(b)];
        }),
      ),
      '',
    );
    const cg = s.codegen ?? [];
    const ids2 = [...new Set(cg.map((r) => r.id))];
    const calls = (x) =>
      x
        ? x.programs
            .map((p) =>
              Object.entries(p.calls)
                .map(([k, v]) => `${k.replace(/^bpf_/, '')}${v > 1 ? `×${v}` : ''}`)
                .join(', '),
            )
            .join(' / ')
        : '–';
    const sum = (x, k) => (x ? x.programs.reduce((a, p) => a + p[k], 0) : null);
    out.push(
      '**Generated code** (`bpftool prog dump xlated`, tracepoint programs only; dumps in `bench/results/xlated/`): ' +
        'instructions, register-to-register moves, stack stores of 0, helper calls.',
      '',
      plainTable(
        [
          'program',
          'insns ours',
          'insns bpftrace',
          'movs ours / bpftrace',
          'zero stores ours / bpftrace',
          'calls ours',
          'calls bpftrace',
        ],
        ids2.map((id) => {
          const a = cg.find((r) => r.id === id && r.tool === 'bpfscope');
          const b = cg.find((r) => r.id === id && r.tool === 'bpftrace');
          return [
            a?.title ?? b?.title,
            a?.insns ?? '–',
            b?.insns ?? '–',
            `${sum(a, 'movs') ?? '–'} / ${sum(b, 'movs') ?? '–'}`,
            `${sum(a, 'zeroStores') ?? '–'} / ${sum(b, 'zeroStores') ?? '–'}`,
            calls(a),
            calls(b),
          ];
        }),
      ),
      '',
    );
  }
  if (name === 'streaming') {
    out.push(
      `Each run: the workload calls getppid for ${s.seconds} s (full rate, or throttled in 1 ms batches); ` +
        '`printf("%d %d\\n", tid, nsecs)` per call. Lost rows have an absolute target of 0.',
      '',
    );
  }
  if (name === 'tools') {
    const failed = Object.entries(s.failed ?? {});
    const ours = Object.entries(s.ours ?? {}).filter(([, v]) => v);
    if (s.headersNote) out.push(`${s.headersNote}.`, '');
    out.push(
      `\`bpfscope <tool>\` found for: ${ours.length ? ours.map(([k]) => k).join(', ') : 'none yet (bcc measured alone)'}.`,
      '',
    );
    if (s.noBcc?.length) out.push(`No \`/usr/sbin/<tool>-bpfcc\` to compare with: ${s.noBcc.join(', ')}.`, '');
    const args = Object.entries(s.args ?? {});
    if (args.length) {
      out.push(
        `Arguments (the same for both): ${args.map(([k, v]) => `\`${k} ${v.join(' ')}\``).join(', ')}. ` +
          'argdist prints nothing before its first 1 s interval, so for it (both tools) "first line" is holding its ' +
          "tracepoint's perf event fd; bcc's profile prints its line before compiling, so for it the bench also waits " +
          'for its per-CPU perf events.',
        '',
      );
    }
    const early = Object.entries(s.raw ?? {}).flatMap(([t, v]) =>
      ['bpfscope', 'bcc'].filter((w) => v[w].some((x) => x.ok && x.fdsAtLine === 0)).map((w) => `${w} ${t}`),
    );
    if (early.length) {
      out.push(`First line printed before any perf event or BPF link fd was open: ${early.join(', ')}.`, '');
    }
    if (failed.length) {
      out.push(
        `bcc tools that do not run here (${failed.length}):`,
        '',
        plainTable(
          ['tool', 'the kernel lacks', 'error (last line)'],
          failed.map(([k, v]) => [k, s.lacks?.[k] ?? '?', `\`${String(v).replace(/\|/g, '\\|').replace(/`/g, "'")}\``]),
        ),
        '',
      );
    }
  }
  if (name === 'tools' && Object.keys(s.oursFailed ?? {}).length) {
    const of = Object.entries(s.oursFailed);
    out.push(
      `bpfscope tools that do not run here (${of.length}), with the sentence they exit with:`,
      '',
      plainTable(
        ['tool', 'error'],
        of.map(([k, v]) => [k, String(v).replace(/\|/g, '\\|')]),
      ),
      '',
    );
  }
  if (name === 'cpuprof' && s.profile) {
    for (const [which, p] of Object.entries(s.profile)) {
      if (p.error) {
        out.push(`${which}: ${p.error}`, '');
        continue;
      }
      out.push(
        `**${which}** (${p.totalMs} ms sampled${p.readyMs ? `, attach line at ${num(p.readyMs)} ms` : ''}; inclusive ms: ` +
          `${Object.entries(p.inclusive)
            .map(([k, v]) => `${k} ${num(v)}`)
            .join(', ')})`,
        '',
        plainTable(
          ['self ms', 'function', 'self ms', 'file'],
          Array.from({ length: Math.max(p.topFunctions.length, p.topFiles.length) }, (_, i) => [
            p.topFunctions[i]?.ms ?? '',
            p.topFunctions[i] ? `\`${p.topFunctions[i].name}\`` : '',
            p.topFiles[i]?.ms ?? '',
            p.topFiles[i]?.name ?? '',
          ]),
        ),
        '',
      );
    }
  }
  if (name === 'flame' && s.markdown) out.push(s.markdown, '');
  return out.join('\n');
}

function render(results) {
  const parts = [];
  for (const name of ORDER) {
    const s = results.sections[name];
    if (s) parts.push(renderSection(name, s));
  }
  return parts.join('\n');
}

function updateReadme(md) {
  const p = join(BENCH_DIR, 'README.md');
  if (!existsSync(p)) return;
  const text = readFileSync(p, 'utf8');
  const begin = '<!-- results:begin -->';
  const end = '<!-- results:end -->';
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) {
    log('bench/README.md has no results markers; not updated');
    return;
  }
  writeFileSync(p, `${text.slice(0, i + begin.length)}\n${md}\n${text.slice(j)}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.render) {
    // re-render results/latest.md (and the README block) from latest.json, measuring nothing
    const md = render(loadResults());
    writeFileSync(join(RESULTS_DIR, 'latest.md'), `${md}\n`);
    if (o.readme) updateReadme(md);
    return;
  }
  if (process.getuid?.() !== 0) throw new Error('the benchmarks load BPF programs: run them as root');
  checkBuilt();
  snapshotDist();
  ensurePeers({ bcc: o.sections.includes('tools') });
  buildHelpers();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const results = loadResults();
  const machine = machineInfo();
  const ctx = {};
  for (const name of o.sections) {
    log(`bench: ${name}`);
    const before = loadSnapshot();
    const t0 = Date.now();
    const r = await runSection(name, o, ctx);
    if (!r) continue;
    const after = loadSnapshot();
    results.sections[name] = {
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine,
      rounds: o.rounds,
      durationS: Math.round((Date.now() - t0) / 1000),
      load: { before, after },
      ...r,
      rows: (r.rows ?? []).map(summarize),
    };
    results.updated = results.sections[name].date;
    writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(results, null, 1)}\n`);
    const md = render(results);
    writeFileSync(join(RESULTS_DIR, 'latest.md'), `${md}\n`);
    if (o.readme) updateReadme(md);
    log(`bench: ${name} done in ${results.sections[name].durationS} s`);
  }
}

main().catch((e) => {
  log(`bench: ${e.message}`);
  process.exit(1);
});
