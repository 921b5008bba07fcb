#!/usr/bin/env node
/**
 * Per-event cost of two builds compared without timing: the kernel's translated ("xlated") instructions of the
 * bench's per-event programs (lib/programs.mjs: OVERHEAD and STREAM_PROGRAM), as `bpftool prog dump xlated` shows
 * them after the verifier's rewrites. Identical instructions cost the same per event whatever the machine's load, so
 * this answers "does a change add per-event cost?" on a busy machine where the timed overhead section cannot.
 *
 *   sudo node bench/codegen/xlated-compare.mjs NAME=DIR NAME=DIR [--out DIR]
 *
 * Each DIR is a built checkout (DIR/dist/bundle/bpfscope.cjs). Every program runs once per build with
 * `-c /usr/bin/sleep 4`; once it has printed `Attached`, its tracepoint programs are found through /proc/PID/fdinfo
 * (`prog_id:`) and dumped. Map ids and 64-bit addresses are replaced by placeholders before comparing; the constant
 * of the `pid == cpid` filter differs between runs by nature and is reported as such. Prints one line per program
 * (instruction counts per build, `same` / `differs only in the cpid constant` / `DIFFERS`); `--out DIR` keeps the
 * normalised dumps (PROGRAM.NAME.txt). Needs root and bpftool. Not a test.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OVERHEAD, STREAM_PROGRAM } from '../lib/programs.mjs';

const args = process.argv.slice(2);
let outDir = null;
const builds = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') outDir = args[++i];
  else if (/^[\w.-]+=/.test(args[i])) {
    const at = args[i].indexOf('=');
    builds.push({ name: args[i].slice(0, at), dir: args[i].slice(at + 1) });
  } else {
    console.error(`xlated-compare: unknown argument ${args[i]} (usage: NAME=DIR NAME=DIR [--out DIR])`);
    process.exit(2);
  }
}
if (builds.length !== 2) {
  console.error('xlated-compare: give exactly two builds, NAME=DIR NAME=DIR');
  process.exit(2);
}
if (outDir) mkdirSync(outDir, { recursive: true });

const PROGRAMS = [...OVERHEAD, { id: 'stream_printf', program: STREAM_PROGRAM }];

/** The BPF program ids a process holds (fd links `anon_inode:bpf-prog`, id from fdinfo). */
function progIds(pid) {
  const ids = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (!readlinkSync(`/proc/${pid}/fd/${fd}`).includes('bpf-prog')) continue;
      const m = /prog_id:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
      if (m) ids.push(Number(m[1]));
    } catch {
      // the fd closed meanwhile
    }
  }
  return ids;
}

/** Run `program` under one build; its tracepoint programs' normalised xlated text and instruction count. */
async function dump(build, program) {
  const child = spawn(
    process.execPath,
    [join(build.dir, 'dist', 'bundle', 'bpfscope.cjs'), '-e', program, '-c', '/usr/bin/sleep 4'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  const exited = new Promise((res) => child.on('exit', res));
  const attached = await new Promise((res) => {
    child.stderr.on('data', (d) => {
      err += d;
      if (/Attached/.test(err)) res(true);
    });
    child.on('exit', () => res(false));
  });
  if (!attached) throw new Error(`${build.name}: the program did not attach: ${err.trim()}`);
  const parts = [];
  let insns = 0;
  for (const id of progIds(child.pid)) {
    const info = JSON.parse(execFileSync('bpftool', ['prog', 'show', 'id', String(id), '-j'], { encoding: 'utf8' }));
    if (info.type !== 'tracepoint') continue;
    const text = execFileSync('bpftool', ['prog', 'dump', 'xlated', 'id', String(id)], { encoding: 'utf8' })
      .replace(/map\[id:\d+\]/g, 'map[id:N]')
      .replace(/0x[0-9a-f]{8,}/g, 'ADDR');
    insns += info.bytes_xlated / 8;
    parts.push(`## ${info.name} (${info.bytes_xlated / 8} insns)\n${text}`);
  }
  child.kill('SIGINT');
  await exited;
  return { insns, text: parts.sort().join('\n'), cpid: child.pid };
}

let differing = 0;
for (const p of PROGRAMS) {
  const [a, b] = [await dump(builds[0], p.program), await dump(builds[1], p.program)];
  if (outDir) {
    writeFileSync(join(outDir, `${p.id}.${builds[0].name}.txt`), a.text);
    writeFileSync(join(outDir, `${p.id}.${builds[1].name}.txt`), b.text);
  }
  // the `pid == cpid` filter's constant is the -c child's pid, different in every run
  const noPid = (t) => t.replace(/if r0 != 0x[0-9a-f]+ goto/g, 'if r0 != CPID goto');
  const verdict =
    a.text === b.text ? 'same' : noPid(a.text) === noPid(b.text) ? 'differs only in the cpid constant' : 'DIFFERS';
  if (verdict === 'DIFFERS') differing++;
  console.log(`${p.id}: ${builds[0].name} ${a.insns} insns, ${builds[1].name} ${b.insns} insns: ${verdict}`);
}
process.exit(differing ? 1 : 0);
