#!/usr/bin/env node
// Load bench of `bpfscope ui` (issue 16; not a test, asserts nothing): 5 headless Chromium tabs (Debian's
// /usr/bin/chromium + playwright-core) watch one one-liner session that printf()s on every system call while a
// busy workload (dd with 1-byte blocks) makes system calls as fast as it can. Records the server's resident memory
// (sampled from /proc/PID/status every 200 ms, and VmHWM, the kernel's peak), each tab's "showing N of M" numbers
// and the animation frames it counted as dropped (more than 50 ms late), and the events the session produced and
// lost. Writes bench/results/ui.json and prints a summary.
//
//   sudo node bench/ui/run.mjs [--seconds 20] [--clients 5]
//
// Measures whatever is in dist/ (run `npm run build` first).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';

const root = new URL('../..', import.meta.url).pathname;
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg('--seconds', 20);
const CLIENTS = arg('--clients', 5);
const PROGRAM = 'tracepoint:raw_syscalls:sys_enter { printf("%d %s %d\\n", pid, comm, args.id); }';

function status(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const env = { ...process.env };
delete env.NODE_EXTRA_CA_CERTS;
const server = spawn(join(root, 'dist', 'bundle', 'bpfscope.cjs'), ['ui'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env,
});
let out = '';
const url = await new Promise((resolve, reject) => {
  server.stdout.on('data', (b) => {
    out += b;
    const m = /serving (http:\S+)\n/.exec(out);
    if (m) resolve(m[1]);
  });
  server.on('exit', (c) => reject(new Error(`bpfscope ui exited with ${c}`)));
});
const origin = new URL(url).origin;
const token = new URL(url).searchParams.get('token');
const idle = status(server.pid);

// start the session from a WebSocket client of our own
const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws?token=${token}`, { origin });
await new Promise((r) => ws.once('open', r));
const reply = new Promise((resolve) => {
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    if (m.type === 'reply' && m.id === 1) resolve(m);
  });
});
ws.send(JSON.stringify({ id: 1, type: 'program', source: PROGRAM }));
const started = await reply;
if (!started.ok) throw new Error(started.error.message);
const sid = started.session.id;

const dir = mkdtempSync(join(tmpdir(), 'bpfscope-uibench-'));
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const pages = [];
for (let i = 0; i < CLIENTS; i++) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(url);
  await page.click('#nav-sessions');
  await page.click(`#sessions-table tr[data-session="${sid}"] a`);
  await page.waitForSelector('#output');
  pages.push(page);
}
ws.close();

const load = spawn('dd', ['if=/dev/zero', 'of=/dev/null', 'bs=1', `count=${1e9}`], { stdio: 'ignore' });
const samples = [];
const t0 = Date.now();
while (Date.now() - t0 < SECONDS * 1000) {
  samples.push(status(server.pid).rss);
  await new Promise((r) => setTimeout(r, 200));
}
load.kill('SIGKILL');
const tabs = [];
for (const page of pages) {
  const s = await page.$eval('#sampling', (e) => ({
    received: Number(e.dataset.received),
    produced: Number(e.dataset.produced),
  }));
  const text = await page.textContent('.program-output .status');
  tabs.push({ ...s, framesDropped: Number(/frames dropped: (\d+)/.exec(text)?.[1] ?? NaN) });
}
const sessions = await (await fetch(`${origin}/api/sessions?token=${token}`)).json();
const info = sessions.find((s) => s.id === sid);
const end = status(server.pid);
await browser.close();
server.kill('SIGINT');
await new Promise((r) => server.once('exit', r));
rmSync(dir, { recursive: true, force: true });

const result = {
  date: new Date().toISOString(),
  seconds: SECONDS,
  clients: CLIENTS,
  program: PROGRAM,
  loadavg: loadavg(),
  serverRssKb: { idle: idle.rss, max: Math.max(...samples), last: samples.at(-1), peakVmHWM: end.hwm },
  session: { results: info?.results, lost: info?.lost, cpuMs: info?.cpuMs },
  tabs,
};
writeFileSync(join(root, 'bench', 'results', 'ui.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
