/**
 * `bpfscope ui` end to end: a real server (the built bin, as root) on the live kernel, driven by headless Chromium
 * (Debian's /usr/bin/chromium + playwright-core, as test/flame/browser.test.ts). The acceptance list of issue 16:
 * execsnoop shows a row for a process spawned with a unique argument; biolatency counts O_DIRECT reads of a loop
 * device in its histogram and heat map; a 3 s profile of a program burning CPU in bpfs_user_burn is found with the
 * flame graph's search; a wrong one-liner shows its error at its position; bad inputs get clear errors and the
 * server keeps running; stopping every session leaves no BPF program, map, link or perf event; no token is 401;
 * --listen elsewhere without a token refuses. Screenshots of each view go to docs/pictures/ui/ (docs/ui.md).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import {
  bpfState,
  bpftoolSkipReason,
  fdHeldIds,
  findLeaks,
  idCount,
  tracefsProbeEvents,
} from '../helpers/bpf-objects.js';
import { repoRoot } from '../helpers/cli.js';
import { workloadPath } from '../helpers/workload.js';
import { liveLoopDevice, liveSkipReason, startBpfscope } from '../tools/helpers.js';
import { stackprogPath, stackprogSkipReason } from '../tools/stackprog.js';
import { startWakeprog } from '../tools/wakeprog.js';

const CHROMIUM = '/usr/bin/chromium';
const PICTURES = join(repoRoot(), 'docs', 'pictures', 'ui');

// The page's globals inside page.evaluate / waitForFunction callbacks (this project compiles without the DOM library).
declare const document: any;
declare const MouseEvent: any;

/** The process's perf event file descriptors (profile's timers, tracepoint attachments). */
function perfEventFds(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:[perf_event]') n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

async function loadPlaywright(): Promise<any> {
  const candidates = ['playwright-core'];
  if (process.env.BPFSCOPE_PLAYWRIGHT_CORE)
    candidates.push(pathToFileURL(join(process.env.BPFSCOPE_PLAYWRIGHT_CORE, 'index.mjs')).href);
  for (const spec of candidates) {
    try {
      const mod = await import(spec);
      return mod.chromium ? mod : (mod.default ?? null);
    } catch {
      // next
    }
  }
  return null;
}

const pw = await loadPlaywright();
const skip =
  liveSkipReason() ??
  bpftoolSkipReason() ??
  (!pw ? 'playwright-core is not installed' : !existsSync(CHROMIUM) ? `${CHROMIUM} is not installed` : undefined);

/** GET `path` of the server with the token, as JSON. */
async function getJson(origin: string, token: string, path: string): Promise<any> {
  const r = await fetch(`${origin}${path}`, { headers: { 'X-Bpfscope-Token': token } });
  assert.equal(r.status, 200, path);
  return r.json();
}

describe('bpfscope ui: server without a browser', { skip: liveSkipReason() }, () => {
  it('--listen 0.0.0.0:PORT without --token-file refuses to start', async () => {
    const r = await startBpfscope(['ui', '--listen', '0.0.0.0:0']).done;
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'ERROR: ui: refusing to listen on 0.0.0.0 without --token-file\n' +
        'HINT: another address than loopback is reachable by others: give a token with --token-file FILE\n',
    );
  });

  it("--token-file: the token is the file's; a session nobody watches ends after --idle-timeout", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-ui-token-'));
    const token = 'bpfs-test-token-0123456789';
    writeFileSync(join(dir, 'token'), `${token}\n`);
    const server = startBpfscope([
      'ui',
      '--listen',
      '127.0.0.1:0',
      '--token-file',
      join(dir, 'token'),
      '--idle-timeout',
      '1',
    ]);
    try {
      assert.ok(await server.waitFor(/serving http:\S+\n/, 30_000), server.stderr());
      const url = new URL(/serving (http:\S+)\n/.exec(server.stdout())![1]!);
      assert.equal(url.searchParams.get('token'), token);
      const ws = new WebSocket(`ws://${url.host}/ws?token=${token}`);
      const replies: any[] = [];
      ws.on('message', (d) => replies.push(JSON.parse(String(d))));
      await new Promise((r) => ws.once('open', r));
      ws.send(JSON.stringify({ id: 1, type: 'start', tool: 'execsnoop', args: [] }));
      while (!replies.some((m) => m.id === 1)) await new Promise((r) => ws.once('message', r));
      const started = replies.find((m) => m.id === 1);
      assert.equal(started.ok, true, JSON.stringify(started));
      assert.ok(idCount(fdHeldIds(server.pid)) > 0);
      ws.close();
      // nobody watches it now: it ends by itself after about a second
      let info: any;
      for (;;) {
        info = (await getJson(url.origin, token, '/api/sessions')).find((s: any) => s.id === started.session.id);
        if (!info || info.state === 'ended') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(info?.ended ?? 'removed', 'idle timeout');
      assert.equal(idCount(fdHeldIds(server.pid)), 0);
    } finally {
      server.child.kill('SIGINT');
      const r = await server.done;
      rmSync(dir, { recursive: true, force: true });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /\nbpfscope ui: stopping every session\.\.\.\n$/);
    }
  });
});

describe('bpfscope ui in headless chromium', { skip }, () => {
  const loop = liveLoopDevice();
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-ui-'));
  let server: ReturnType<typeof startBpfscope>;
  let url = '';
  let origin = '';
  let token = '';
  let context: any;
  let page: any;
  const before0 = { state: undefined as unknown as ReturnType<typeof bpfState>, tracefs: [] as string[] };
  const consoleErrors: string[] = [];

  const shot = async (name: string, p: any = page): Promise<void> => {
    mkdirSync(PICTURES, { recursive: true });
    await p.screenshot({ path: join(PICTURES, `${name}.png`) });
  };
  const openTool = async (name: string): Promise<void> => {
    await page.click(`nav.catalog a[data-tool="${name}"]`);
    await page.waitForSelector('#tool-form');
  };
  /** A tool of the catalogue that runTool does not run (none once every tool is on it). */
  const unavailableTool = async (): Promise<string | undefined> => {
    const groups = await getJson(origin, token, '/api/catalog');
    return groups.flatMap((g: any) => g.tools).find((x: any) => !x.available)?.name;
  };
  const serverAlive = async (): Promise<void> => {
    const r = await fetch(`${origin}/api/sessions`, { headers: { 'X-Bpfscope-Token': token } });
    assert.equal(r.status, 200);
  };

  before(async () => {
    before0.state = bpfState();
    before0.tracefs = tracefsProbeEvents();
    server = startBpfscope(['ui', '--idle-timeout', '600'], { timeoutMs: 600_000 });
    assert.ok(await server.waitFor(/serving http:\S+\n/, 30_000), server.stderr());
    url = /serving (http:\S+)\n/.exec(server.stdout())![1]!;
    const u = new URL(url);
    origin = u.origin;
    token = u.searchParams.get('token')!;
    context = await pw.chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 900 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m: any) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e: any) => consoleErrors.push(String(e)));
    await page.goto(url);
    await page.waitForSelector('.conn-open');
  });

  after(async () => {
    await context?.close();
    if (server) {
      server.child.kill('SIGINT');
      await server.done;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('requests without the token, or with a wrong one, get 401', async () => {
    for (const path of [
      '/',
      '/api/catalog',
      '/assets/app.js',
      `/?token=${'0'.repeat(64)}`,
      `/t/${'1'.repeat(64)}/speedscope/index.html`,
    ]) {
      const r = await fetch(`${origin}${path}`);
      assert.equal(r.status, 401, path);
    }
    const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws`);
    const status = await new Promise<number>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    assert.equal(status, 401);
    const ok = await fetch(url);
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get('content-security-policy') ?? '', /^default-src 'self'; script-src 'self';/);
  });

  it('the catalogue groups the tools; a tool runTool does not run is "not yet available"', async (t) => {
    const groups: string[] = await page.$$eval('nav.catalog h3', (hs: any[]) => hs.map((h) => h.textContent));
    assert.deepEqual(groups, [
      'bpftrace',
      'CPU',
      'memory',
      'file systems',
      'disks',
      'network',
      'scheduler',
      'languages',
      'tracing (any layer)',
    ]);
    // every tool runTool runs is available (syscount: the counting table); the others say so
    assert.equal(await page.getAttribute('nav.catalog a[data-tool="syscount"]', 'class'), ' ');
    const name = await unavailableTool();
    if (!name) {
      t.diagnostic('every tool of the catalogue runs in the UI: no "not yet available" page to check');
      return;
    }
    await page.click(`nav.catalog a[data-tool="${name}"]`);
    assert.equal(
      await page.textContent('#unavailable'),
      `${name} is not yet available in the UI: run it from the command line (bpfscope ${name} -h).`,
    );
  });

  it('execsnoop: a row for a process spawned with a unique argument', async () => {
    const tag = `bpfs_ui_${process.pid}_${Date.now()}`;
    await openTool('execsnoop');
    await shot('tool-form');
    await page.click('#start');
    // the reply comes once the tool is attached
    await page.waitForSelector('#session-state:text("running")');
    const p = spawnSync('/bin/true', [tag, 'x']);
    assert.equal(p.status, 0);
    await page.waitForSelector(`#rows td:text-is("/bin/true ${tag} x")`, { timeout: 20_000 });
    const row: string[] = await page.$eval(`#rows tr:has(td:text-is("/bin/true ${tag} x"))`, (tr: any) =>
      [...tr.querySelectorAll('td')].map((td: any) => td.textContent),
    );
    const cols: string[] = await page.$$eval('#rows thead tr:first-child th', (ths: any[]) =>
      ths.map((t) => t.textContent),
    );
    assert.equal(row[cols.indexOf('comm')], 'true');
    assert.equal(row[cols.indexOf('ret')], '0');
    // a column filter keeps the matching rows only
    await page.fill('#rows input.filter[data-col="args"]', tag);
    assert.equal(await page.$$eval('#rows tbody tr', (trs: any[]) => trs.length), 1);
    await shot('execsnoop');
  });

  it(
    'biolatency: O_DIRECT reads of a loop device show in the histogram and the heat map',
    { skip: loop.skip },
    async () => {
      await openTool('biolatency');
      await page.fill('#opt-disk', loop.device().name);
      assert.equal(await page.inputValue('#opt-interval'), '1');
      await page.click('#start');
      await page.waitForSelector('#session-state:text("running")');
      const w = spawnSync(workloadPath(), ['comm', 'bpfs_bio', 'odirect-read', loop.device().path, '10', '65536'], {
        encoding: 'utf8',
      });
      assert.equal(w.status, 0, w.stderr);
      await page.waitForFunction(
        () =>
          document.querySelector('#hist-total')?.dataset.total === '10' &&
          document.querySelector('#heatmap')?.dataset.total === '10',
        null,
        { timeout: 30_000 },
      );
      await page.waitForFunction(() => Number(document.querySelector('#heatmap')?.dataset.columns) >= 3, null, {
        timeout: 30_000,
      });
      await shot('biolatency');
    },
  );

  it(
    'profile: a 3 s capture of a program burning CPU, found with the flame graph search',
    { skip: stackprogSkipReason() },
    async () => {
      const child = spawn(stackprogPath(), ['cpu', '60000'], { stdio: 'ignore' });
      try {
        await openTool('profile');
        await page.fill('#opt-pid', String(child.pid));
        await page.check('#opt-user_stacks_only');
        await page.fill('#opt-frequency', '99');
        await page.fill('#opt-duration', '3');
        await page.click('#start');
        await page.waitForSelector('#countdown');
        // a countdown of the 3 s, not "until the tool ends"
        await page.waitForFunction(() => /s left/.test(document.querySelector('#countdown')?.textContent ?? ''), null, {
          timeout: 10_000,
        });
        assert.match(await page.textContent('#countdown'), /capturing stacks… [0-3] s left/);
        await shot('profile-capturing');
        await page.waitForFunction(() => Number(document.querySelector('#flame')?.dataset.stacks) > 0, null, {
          timeout: 60_000,
        });
        await page.waitForSelector('#flame rect');
        await page.fill('#flame-search', 'bpfs_user_burn');
        await page.click('#flame-search-go');
        await page.waitForFunction(() => Number(document.querySelector('#flame-match')?.dataset.matches) > 0);
        const text: string = await page.textContent('#flame-match');
        assert.match(text, /^\d+ frames match: \d+ of \d+ samples \(\d+\.\d%\)$/);
        await shot('profile');
        // the downloads: folded lines hold the function; speedscope's page is served locally
        const sid: string = await page.getAttribute('section.session', 'data-session');
        const folded = await (await fetch(`${origin}/api/sessions/${sid}/stacks.folded?token=${token}`)).text();
        assert.match(folded, /^bpfs_stackprog;.*bpfs_user_burn.* \d+$/m);
        const svg = await fetch(`${origin}/api/sessions/${sid}/flame.svg?token=${token}`);
        assert.equal(svg.headers.get('content-type'), 'image/svg+xml');
        assert.match(await svg.text(), /bpfs_user_burn/);
        // "open in speedscope": speedscope's own page, served here, loads the capture
        const [ss] = await Promise.all([context.waitForEvent('page'), page.click('#open-speedscope')]);
        const ssErrors: string[] = [];
        ss.on('console', (m: any) => {
          if (m.type() === 'error') ssErrors.push(m.text());
        });
        await ss.waitForLoadState();
        // speedscope draws frames on a canvas: its toolbar (Time Order, ...) and the profile's name show once loaded
        await ss.waitForFunction(() => /Time Order/.test(document.body.innerText), null, { timeout: 20_000 });
        assert.match(
          await ss.evaluate(() => document.body.innerText),
          /\nprofile --pid \d+ --user-stacks-only --frequency 99 3\n/,
        );
        assert.deepEqual(ssErrors, []);
        await shot('speedscope', ss);
        await ss.close();
        // a second capture: the differential view against the first one colours frames by their change
        await openTool('profile');
        await page.fill('#opt-pid', String(child.pid));
        await page.check('#opt-user_stacks_only');
        await page.fill('#opt-frequency', '99');
        await page.fill('#opt-duration', '3');
        await page.click('#start');
        await page.waitForFunction(() => Number(document.querySelector('#flame')?.dataset.stacks) > 0, null, {
          timeout: 60_000,
        });
        // data-stacks is set when the view renders; d3-flame-graph draws in an effect after that
        await page.waitForSelector('#flame rect');
        const normal: string[] = await page.$$eval('#flame rect', (rs: any[]) => rs.map((r) => r.getAttribute('fill')));
        await page.check('#flame-diff');
        // d3-flame-graph's differential colours: grey rgb(220,220,220) for no change, r=220 (growth: less blue and
        // green), b=220 (shrinking: less red and green), rgb(255,190,90) for frames new in this capture
        const DIFF = /^rgb\((220,\d+,\d+|\d+,\d+,220|255,190,90)\)$/;
        await page.waitForFunction(
          (re: string) =>
            [...document.querySelectorAll('#flame rect')].every((r: any) =>
              new RegExp(re).test(r.getAttribute('fill')),
            ),
          DIFF.source,
        );
        const diff: string[] = await page.$$eval('#flame rect', (rs: any[]) => rs.map((r) => r.getAttribute('fill')));
        assert.ok(diff.length > 0 && diff.every((f) => DIFF.test(f)), diff.join(' '));
        assert.ok(!normal.every((f) => DIFF.test(f)), normal.join(' '));
        await shot('profile-differential');
      } finally {
        child.kill('SIGKILL');
      }
    },
  );

  it('a wrong one-liner shows its error at its position', async () => {
    await page.click('#nav-oneliner');
    await page.fill('#source', 'BEGIN { @x = ; }');
    await page.click('#run');
    await page.waitForSelector('#program-error li');
    assert.equal(await page.textContent('#program-error li'), '1:14: ERROR: syntax: expected expression');
    assert.deepEqual(await page.$$eval('#highlight .hl-error', (s: any[]) => s.map((x) => x.textContent)), [';']);
    await shot('oneliner-error');
  });

  it('the unsafe builtins are refused in a one-liner without ui --unsafe', async () => {
    await page.click('#nav-oneliner');
    await page.fill('#source', 'BEGIN { system("true"); }');
    await page.click('#run');
    await page.waitForFunction(
      () => (document.querySelector('#program-error li')?.textContent ?? '').includes('unsafe'),
      undefined,
      { timeout: 20_000 },
    );
    assert.equal(
      await page.textContent('#program-error li'),
      '1:9: ERROR: system() is an unsafe function being used in safe mode (use --unsafe)',
    );
  });

  it('a one-liner: its printf lines and maps, live', async () => {
    const tag = `bpfs_ol_${process.pid}`;
    await page.click('#nav-oneliner');
    await page.fill(
      '#source',
      'tracepoint:syscalls:sys_enter_execve { printf("exec %s\\n", str(args.filename)); @execs[comm] = count(); }',
    );
    await page.click('#run');
    await page.waitForSelector('#session-state:text("running")');
    spawnSync('/bin/true', [tag]);
    await page.waitForFunction(
      () => /exec \/bin\/true\n/.test(document.querySelector('#output')?.textContent ?? ''),
      null,
      {
        timeout: 20_000,
      },
    );
    await page.waitForSelector('.map h4:text("@execs")', { timeout: 20_000 });
    await shot('oneliner');
  });

  it('bad inputs get a clear error and the server keeps running', async () => {
    // an option the tool refuses
    await openTool('execsnoop');
    await page.fill('#opt-max_args', '-5');
    await page.click('#start');
    await page.waitForSelector('#start-error');
    assert.equal(await page.textContent('#start-error'), "execsnoop: --max-args must be a number, not '-5'");
    await serverAlive();
    // a 10 MB one-liner
    await page.click('#nav-oneliner');
    await page.$eval(
      '#source',
      (t: any, n: number) => {
        t.value = `BEGIN { printf("${'x'.repeat(8)}"); }`.padEnd(n, ' ');
        t.dispatchEvent(new Event('input', { bubbles: true }));
      },
      10 << 20,
    );
    await page.click('#run');
    await page.waitForSelector('#program-error');
    assert.equal(
      await page.textContent('#program-error'),
      'the program is 10485760 characters long; the UI compiles programs of at most 65536',
    );
    await serverAlive();
    // a malformed message, an unknown session id, an unknown type (a client of its own)
    const ws = new WebSocket(`${origin.replace('http', 'ws')}/ws?token=${token}`, { origin });
    const replies: any[] = [];
    ws.on('message', (d) => replies.push(JSON.parse(String(d))));
    await new Promise((r) => ws.once('open', r));
    const waitFor = async (pred: (m: any) => boolean): Promise<any> => {
      for (;;) {
        const m = replies.find(pred);
        if (m) return m;
        await new Promise((r) => ws.once('message', r));
      }
    };
    ws.send('{not json');
    assert.match((await waitFor((m) => m.type === 'error')).message, /^malformed message: /);
    ws.send(JSON.stringify({ id: 7, type: 'watch', session: 'nope' }));
    assert.deepEqual((await waitFor((m) => m.id === 7)).error, {
      message: 'no session "nope" (it ended and was removed, or never existed)',
    });
    ws.send(JSON.stringify({ id: 8, type: 'start', tool: 'execsnoop', args: 'oops' }));
    assert.equal(
      (await waitFor((m) => m.id === 8)).error.message,
      '"args" must be a list of at most 64 strings (the tool\'s command-line flags)',
    );
    // an option that writes a file as root (abbreviated, as argparse reads it): refused without ui --unsafe
    const svgPath = join(dir, 'refused.svg');
    ws.send(JSON.stringify({ id: 10, type: 'start', tool: 'profile', args: ['--sv', svgPath, '1'] }));
    assert.equal(
      (await waitFor((m) => m.id === 10)).error.message,
      'profile: --svg writes a file on the server as root: refused in the UI (start bpfscope ui with --unsafe to allow it)',
    );
    assert.equal(existsSync(svgPath), false);
    const unavailable = await unavailableTool();
    if (unavailable) {
      ws.send(JSON.stringify({ id: 9, type: 'start', tool: unavailable }));
      assert.equal(
        (await waitFor((m) => m.id === 9)).error.message,
        `${unavailable} is not yet available in the UI (run it from the command line)`,
      );
    }
    ws.close();
    await serverAlive();
  });

  it(
    'offwaketime: a reader blocked on a pipe and the writer that woke it, waker frames in blues',
    { skip: stackprogSkipReason() },
    async () => {
      const w = startWakeprog(['pipe', '2', '300000']);
      try {
        await openTool('offwaketime');
        await page.fill('#opt-tgid', String(w.pid));
        await page.fill('#opt-duration', '120');
        await page.click('#start');
        await page.waitForSelector('#session-state:text("running")');
        w.go();
        await w.measured;
        // Stop ends the capture: the tool reports its stacks then
        await page.click('#stop');
        await page.waitForFunction(() => Number(document.querySelector('#flame')?.dataset.stacks) > 0, null, {
          timeout: 60_000,
        });
        const sid: string = await page.getAttribute('section.session', 'data-session');
        const folded = await (await fetch(`${origin}/api/sessions/${sid}/stacks.folded?token=${token}`)).text();
        // bcc's -f line: the blocked thread's stack, `--`, the waker's stack from the wake-up outwards, the waker
        assert.match(
          folded,
          /^bpfs_reader;.*;bpfs_read_wait;.*;__schedule(_\[k\])?;--;try_to_wake_up(_\[k\])?;.*;bpfs_write_wake;.*;bpfs_writer \d+$/m,
        );
        const fills = (name: string): Promise<string[]> =>
          page.$$eval(`#flame g[name="${name}"] rect`, (rs: any[]) => rs.map((r) => r.getAttribute('fill')));
        // waker frames: blue (r = g < b); the separator grey; the blocked thread's frames: d3-flame-graph's warm hues
        const BLUE = /^rgb\((\d+),\1,(19\d|2[0-4]\d)\)$/;
        const waker = await fills('bpfs_write_wake');
        assert.ok(waker.length > 0 && waker.every((f) => BLUE.test(f)), waker.join(' '));
        assert.ok((await fills('try_to_wake_up')).every((f) => BLUE.test(f)));
        assert.ok((await fills('--')).every((f) => f === 'rgb(160,160,160)'));
        const target = await fills('bpfs_read_wait');
        assert.ok(target.length > 0 && !target.some((f) => BLUE.test(f)), target.join(' '));
        await page.fill('#flame-search', 'bpfs_write_wake');
        await page.click('#flame-search-go');
        await page.waitForFunction(() => Number(document.querySelector('#flame-match')?.dataset.matches) > 0);
        assert.match(await page.textContent('#flame-match'), /^\d+ frames match: \d+ of \d+ microseconds/);
        await page.click('text=Reset zoom and search');
        await page.fill('#flame-search', 'bpfs_reader');
        await page.click('#flame-search-go');
        await page.waitForFunction(() => Number(document.querySelector('#flame-match')?.dataset.matches) > 0);
        // zoomed on the reader's blocked stacks (a click on its widest frame), scrolled to the flame graph's base
        await page.click('text=Reset zoom and search');
        await page.$$eval('#flame g[name="bpfs_reader"]', (gs: any[]) => {
          // the reader as the blocked thread (not as the waker of the main thread's pthread_join)
          const widest = gs
            .filter((g) => !g.__data__?.data?.waker)
            .sort((a, b) => b.getBBox().width - a.getBBox().width)[0];
          widest.dispatchEvent(new MouseEvent('click', { bubbles: true }));
        });
        await page.setViewportSize({ width: 1400, height: 1200 });
        try {
          await page.$eval('main', (m: any) => (m.scrollTop = m.scrollHeight));
          await shot('offwaketime');
        } finally {
          await page.setViewportSize({ width: 1400, height: 900 });
        }
        const svg = await (await fetch(`${origin}/api/sessions/${sid}/flame.svg?token=${token}`)).text();
        assert.match(svg, /bpfs_write_wake/);
        w.finish();
        assert.equal((await w.done).code, 0);
      } finally {
        w.child.kill('SIGKILL');
      }
    },
  );

  it("syscount --exec: the counting table of the command's syscalls, sortable, with its tick time", async () => {
    await openTool('syscount');
    // the form asks for a tick every second; the command's calls are counted in one tick when it exits
    assert.equal(await page.inputValue('#opt-interval'), '1');
    await page.fill('#opt-interval', '');
    await page.fill('#opt-exec', `${workloadPath()} getpgrp 137 getppid 3`);
    await page.click('#start');
    await page.waitForSelector('#session-state:text("ended: exit status 0")', { timeout: 60_000 });
    await page.waitForSelector('table.counts[data-table="rows"] td[data-col="name"]:text-is("getpgrp")');
    const table = async (): Promise<string[][]> =>
      page.$$eval('table.counts[data-table="rows"] tbody tr', (trs: any[]) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td: any) => td.textContent)),
      );
    const cols: string[] = await page.$$eval('table.counts[data-table="rows"] th', (ths: any[]) =>
      ths.map((t) => t.dataset.col),
    );
    assert.deepEqual(cols, ['key', 'name', 'count', 'totalNs']);
    const rows = await table();
    const count = (name: string) => rows.find((r) => r[1] === name)?.[2];
    assert.equal(count('getpgrp'), '137');
    assert.equal(count('getppid'), '3');
    // bcc's order: by count, most first; a click on "name" sorts by name (descending), again ascending
    assert.deepEqual(rows[0]!.slice(1, 3), ['getpgrp', '137']);
    assert.match(await page.textContent('#tick'), /^tick at \d\d:\d\d:\d\d \(1 ticks so far\)$/);
    await page.click('table.counts[data-table="rows"] th[data-col="name"]');
    await page.click('table.counts[data-table="rows"] th[data-col="name"]');
    const names = (await table()).map((r) => r[1]!);
    assert.deepEqual(
      names,
      [...names].sort((a, b) => a.localeCompare(b)),
    );
    await page.click('table.counts[data-table="rows"] th[data-col="count"]');
    assert.deepEqual((await table())[0]!.slice(1, 3), ['getpgrp', '137']);
    await shot('counts');
  });

  it('funccount -p PID: Stop reports the last tick: getpid 2, getpgrp 3, getppid 4', async () => {
    const w = spawn(workloadPath(), ['wait-stdin', 'getppid', '4', 'getpid', '2', 'getpgrp', '3'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise<number | null>((resolve) => w.on('close', (c) => resolve(c)));
    try {
      await openTool('funccount');
      await page.fill('#opt-pid', String(w.pid));
      await page.fill('#opt-interval', '');
      await page.fill('#opt-pattern', 't:syscalls:sys_enter_getp*');
      await page.click('#start');
      await page.waitForSelector('#session-state:text("running")');
      assert.match(await page.textContent('#tick'), /^waiting for the first tick/);
      w.stdin!.end('x');
      assert.equal(await exited, 0);
      await page.click('#stop');
      await page.waitForSelector('table.counts[data-table="rows"] tbody tr', { timeout: 30_000 });
      const rows: string[][] = await page.$$eval('table.counts[data-table="rows"] tbody tr', (trs: any[]) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td: any) => td.textContent)),
      );
      assert.deepEqual(rows, [
        ['syscalls:sys_enter_getpid', '2'],
        ['syscalls:sys_enter_getpgrp', '3'],
        ['syscalls:sys_enter_getppid', '4'],
      ]);
    } finally {
      w.kill('SIGKILL');
    }
  });

  it('an event table: the row limit, pause and resume, and a reload that finds the session again', async () => {
    const dirOpen = mkdtempSync(join(tmpdir(), 'bpfscope-ui-open-'));
    const opens = (name: string, n: number): void => {
      const path = join(dirOpen, name);
      writeFileSync(path, '');
      const r = spawnSync(workloadPath(), ['comm', 'bpfs_uirows', 'openat', path, String(n)], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    };
    const tableRows = (): Promise<number> => page.$$eval('#rows tbody tr', (trs: any[]) => trs.length);
    const total = (n: number) =>
      page.waitForFunction((x: number) => Number(document.querySelector('#showing')?.dataset.total) === x, n, {
        timeout: 30_000,
      });
    try {
      await openTool('opensnoop');
      await page.fill('#opt-name', 'bpfs_uirows');
      await page.click('#start');
      await page.waitForSelector('#session-state:text("running")');
      const sid: string = await page.getAttribute('section.session', 'data-session');
      // the row limit: 200 opens, a table of 50, "showing 50 of 200"
      await page.fill('#row-limit', '50');
      await page.dispatchEvent('#row-limit', 'change');
      opens('limit', 200);
      await total(200);
      assert.equal(await tableRows(), 50);
      assert.equal(await page.textContent('#showing'), 'showing 50 of 200 rows');
      // paused: rows that come are counted, not shown
      await page.check('#pause');
      opens('while-paused', 5);
      await page.waitForFunction(() => document.querySelector('#paused-count')?.dataset.skipped === '5', null, {
        timeout: 30_000,
      });
      assert.equal(await page.$$eval('#rows td:text-matches("while-paused")', (t: any[]) => t.length), 0);
      assert.equal(await tableRows(), 50);
      // resumed: new rows show again
      await page.uncheck('#pause');
      opens('resumed', 3);
      await page.waitForSelector(`#rows td:text-is("${join(dirOpen, 'resumed')}")`, { timeout: 30_000 });
      assert.equal(await page.$$eval('#rows td:text-matches("while-paused")', (t: any[]) => t.length), 0);
      assert.equal(await tableRows(), 50);
      // a reload (a new page and WebSocket): the session is still listed, and its rows come again
      await page.reload();
      await page.waitForSelector('.conn-open');
      await page.waitForSelector(`#sessions-table tr[data-session="${sid}"][data-state="running"]`);
      await page.click(`#sessions-table tr[data-session="${sid}"] a`);
      await page.waitForSelector(`#rows td:text-is("${join(dirOpen, 'resumed')}")`);
      opens('after-reload', 2);
      await page.waitForSelector(`#rows td:text-is("${join(dirOpen, 'after-reload')}")`, { timeout: 30_000 });
    } finally {
      rmSync(dirOpen, { recursive: true, force: true });
    }
  });

  it('the sessions list: a busy session costs more CPU than an idle one', async () => {
    const start = async (source: string): Promise<string> => {
      await page.click('#nav-oneliner');
      await page.fill('#source', source);
      await page.click('#run');
      await page.waitForSelector('#session-state:text("running")');
      return page.getAttribute('section.session', 'data-session');
    };
    // the idle one traces a syscall nothing makes (acct(2)); the busy one every getppid(2)
    const idle = await start('tracepoint:syscalls:sys_enter_acct { @calls = count(); }');
    const busy = await start('tracepoint:syscalls:sys_enter_getppid { @calls[comm] = count(); }');
    await page.click('#nav-sessions');
    const cost = (id: string, what: string): Promise<number> =>
      page.$eval(
        `#sessions-table tr[data-session="${id}"] td.cpu`,
        (td: any, w: string) => Number(td.dataset[w]),
        what,
      );
    // getppid(2) in a loop until the list (sent every 2 s; kernel time counted per second) shows the difference
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const c = spawn(workloadPath(), ['comm', 'bpfs_uibusy', 'getppid', '20000'], { stdio: 'ignore' });
        await new Promise((r) => c.on('close', r));
      }
    })();
    try {
      await page.waitForFunction(
        ([b, i]: string[]) => {
          const v = (id: string, w: string) =>
            Number(document.querySelector(`#sessions-table tr[data-session="${id}"] td.cpu`)?.dataset[w]);
          return v(b!, 'bpf') > v(i!, 'bpf') && v(b!, 'cpu') > v(i!, 'cpu');
        },
        [busy, idle],
        { timeout: 60_000 },
      );
    } finally {
      stop = true;
      await loop;
    }
    assert.equal(await cost(idle, 'bpf'), 0);
    await shot('sessions-cpu');
  });

  it('a second tab watches the same session; stop all leaves no BPF object behind', async () => {
    const page2 = await context.newPage();
    try {
      await page2.goto(url);
      await page2.waitForSelector('#sessions-table tr[data-state="running"]');
      await shot('sessions', page2);
      const ours = fdHeldIds(server.pid);
      assert.ok(idCount(ours) > 0, 'the running sessions hold BPF objects');
      await page.click('#nav-sessions');
      await page.click('#stop-all');
      await page.waitForFunction(
        () => document.querySelectorAll('#sessions-table tr[data-state="running"]').length === 0,
      );
      await page2.waitForFunction(
        () => document.querySelectorAll('#sessions-table tr[data-state="running"]').length === 0,
      );
      assert.equal(idCount(fdHeldIds(server.pid)), 0, 'the server still holds BPF objects');
      assert.equal(perfEventFds(server.pid), 0, 'the server still holds perf events');
      const leaks = await findLeaks(before0, ours);
      assert.equal(idCount(leaks.leaked), 0, JSON.stringify([...leaks.leaked.progs]));
      assert.deepEqual(leaks.tracefs, []);
      await shot('sessions-stopped');
    } finally {
      await page2.close();
    }
    assert.deepEqual(consoleErrors, []);
  });
});
