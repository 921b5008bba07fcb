/**
 * The flame graph SVG's JavaScript in a real headless browser (Debian's chromium driven by playwright-core):
 * hover details, search (Ctrl-F prompt, regex, case toggle, "Matched: N%", highlight), click to zoom, reset zoom,
 * and the zoom/search state in the URL; the same on --colors chain graphs (waker frames after "--", one and two
 * wakers deep: search across the levels, zoom into the second waker, the zoom in the URL); and the latency
 * heat map's hover details (trace2heatmap.pl's text).
 *
 * playwright-core is the project's devDependency; without node_modules it is taken from $BPFSCOPE_PLAYWRIGHT_CORE
 * (a directory holding the package) or /tmp/pw/node_modules/playwright-core. The test is skipped, saying why, when
 * playwright-core or /usr/bin/chromium (Debian's chromium package) is missing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { renderFlameGraph } from '../../src/flame/flamegraph.js';
import { HeatMapInput, renderHeatMap, renderHistHeatMap } from '../../src/flame/heatmap.js';
import { fixture, readLines, svgFrames } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';

// The page's globals, inside page.evaluate callbacks (this project compiles without the DOM library).
declare const document: any;

type Playwright = any;

async function loadPlaywright(): Promise<Playwright | null> {
  const candidates = ['playwright-core'];
  if (process.env.BPFSCOPE_PLAYWRIGHT_CORE)
    candidates.push(pathToFileURL(join(process.env.BPFSCOPE_PLAYWRIGHT_CORE, 'index.mjs')).href);
  candidates.push(pathToFileURL('/tmp/pw/node_modules/playwright-core/index.mjs').href);
  for (const spec of candidates) {
    try {
      const mod = await import(spec);
      return mod.chromium ? mod : (mod.default ?? null);
    } catch {
      // try the next one
    }
  }
  return null;
}

const pw = await loadPlaywright();
const skip = !pw ? 'playwright-core is not installed' : !existsSync(CHROMIUM) ? `${CHROMIUM} is not installed` : false;

describe('flame graph SVG in headless chromium', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'bpfscope-browser-'));
  const svgPath = join(dir, 'graph.svg');
  const { svg } = renderFlameGraph(readLines(fixture('small.folded')));
  writeFileSync(svgPath, svg);
  const url = pathToFileURL(svgPath).href;
  // Geometry from the document itself: "title|x|y|width|...".
  const frames = svgFrames(svg).map((f) => {
    const [title, x, y, w] = f.split('|');
    return { title: title!, name: title!.replace(/ \([^()]*\)$/, ''), x: x!, y: y!, w: Number(w) };
  });
  const frame = (name: string) => {
    const f = frames.find((x) => x.name === name);
    assert.ok(f, name);
    return f;
  };
  const rootWidth = frame('all').w;

  let context: any;
  let page: any;
  before(async () => {
    // A fresh profile directory (playwright passes it as --user-data-dir).
    context = await pw.chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 400 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await context.newPage();
  });
  after(async () => {
    await context?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The rect attributes and group classes of the frame titled `name`. */
  const state = (name: string) =>
    page.evaluate((n: string) => {
      for (const g of document.querySelectorAll('#frames > *')) {
        const t = g.querySelector('title')!.textContent!;
        if (t.replace(/ \([^()]*\)$/, '') !== n) continue;
        const r = g.querySelector('rect')!;
        return {
          x: r.getAttribute('x'),
          width: r.getAttribute('width'),
          fill: r.getAttribute('fill'),
          cls: g.getAttribute('class') ?? '',
          label: g.querySelector('text')!.textContent,
        };
      }
      return null;
    }, name);
  const text = (id: string) => page.evaluate((i: string) => document.getElementById(i)!.textContent, id);
  const hidden = (id: string) =>
    page.evaluate((i: string) => document.getElementById(i)!.classList.contains('hide'), id);
  /** Clicks the rectangle of the frame titled `name` (found by title: zooming moves rectangles). */
  const clickFrame = (name: string) => {
    frame(name);
    const title = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(`);
    // Click the frame's group: its label may lie over the rectangle, and both belong to the frame.
    return page
      .locator('#frames > *')
      .filter({ has: page.locator('title', { hasText: title }) })
      .click();
  };

  it('shows details on hover', async () => {
    await page.goto(url);
    const f = frame('swapper');
    await page.hover(`#frames rect[x="${f.x}"][y="${f.y}"]`);
    assert.equal(await text('details'), `Function: ${f.title}`);
  });

  it('searches with Ctrl-F: highlights matches and reports the matched share', async () => {
    await page.goto(url);
    page.once('dialog', (d: { accept: (v: string) => Promise<void> }) => d.accept('^(swapper|native_safe_halt)$'));
    await page.keyboard.press('Control+f');
    await page.waitForFunction(() => !document.getElementById('matched')!.classList.contains('hide'));
    // native_safe_halt is nested in swapper: counted once.
    const pct = ((100 * frame('swapper').w) / rootWidth).toFixed(1);
    assert.equal(await text('matched'), `Matched: ${pct}%`);
    assert.equal((await state('swapper')).fill, 'rgb(230,0,230)');
    assert.equal((await state('native_safe_halt')).fill, 'rgb(230,0,230)');
    assert.notEqual((await state('java')).fill, 'rgb(230,0,230)');
    assert.equal(await text('search'), 'Reset Search');
    assert.match(page.url(), /[?&]s=%5E\(swapper%7Cnative_safe_halt\)%24/);
    // The button resets the search.
    await page.click('#search');
    const original = /<title>swapper [^<]*<\/title><rect [^>]*fill="([^"]+)"/.exec(svg)![1];
    assert.equal((await state('swapper')).fill, original);
    assert.equal(await hidden('matched'), true);
    assert.equal(await text('search'), 'Search');
    assert.doesNotMatch(page.url(), /[?&]s=/);
  });

  it('toggles case-insensitive search with the ic button', async () => {
    await page.goto(url);
    page.once('dialog', (d: { accept: (v: string) => Promise<void> }) => d.accept('SWAPPER'));
    await page.click('#search');
    await page.waitForFunction(() => !document.getElementById('matched')!.classList.contains('hide'));
    assert.equal(await text('matched'), 'Matched: 0.0%');
    await page.click('#ignorecase');
    assert.equal(await text('matched'), `Matched: ${((100 * frame('swapper').w) / rootWidth).toFixed(1)}%`);
    assert.equal(await page.evaluate(() => document.getElementById('ignorecase')!.classList.contains('show')), true);
  });

  it('zooms on click and resets', async () => {
    await page.goto(url);
    const app = frame('app');
    const before = await state('worker');
    await clickFrame('app');
    const zoomedApp = await state('app');
    assert.equal(zoomedApp.x, '10.0');
    assert.equal(zoomedApp.width, '1180.0');
    assert.equal(zoomedApp.cls, '');
    assert.equal((await state('all')).cls, 'parent');
    assert.equal((await state('java')).cls, 'hide');
    const zoomed = await state('worker');
    const ratio = 1180 / app.w;
    assert.equal(Number(zoomed.width), Number((Number(before.width) * ratio).toFixed(1)));
    assert.equal(zoomed.label, 'worker');
    assert.equal(await hidden('unzoom'), false);
    assert.match(page.url(), new RegExp(`[?&]x=${app.x.replace('.', '\\.')}&y=${app.y}`));
    // A click on an ancestor zooms out to it; a click on the root resets.
    await clickFrame('compute');
    assert.equal((await state('compute')).width, '1180.0');
    assert.equal((await state('app')).cls, 'parent');
    await clickFrame('app');
    assert.equal((await state('app')).width, '1180.0');
    assert.equal((await state('app')).cls, '');
    assert.equal((await state('compute')).cls, '');
    await clickFrame('all');
    assert.equal(await hidden('unzoom'), true);
    assert.deepEqual(await state('worker'), before);
    await clickFrame('app');
    await page.click('#unzoom');
    assert.deepEqual(await state('worker'), before);
    assert.equal((await state('all')).cls, '');
    assert.equal((await state('java')).cls, '');
    assert.equal(await hidden('unzoom'), true);
    assert.doesNotMatch(page.url(), /[?&]x=/);
  });

  it('zooms icicle graphs too (ancestors above)', async () => {
    const icicle = join(dir, 'icicle.svg');
    const doc = renderFlameGraph(readLines(fixture('small.folded')), { inverted: true }).svg;
    writeFileSync(icicle, doc);
    await page.goto(pathToFileURL(icicle).href);
    await clickFrame('compute');
    assert.equal((await state('compute')).width, '1180.0');
    assert.equal((await state('app')).cls, 'parent');
    assert.equal((await state('inner')).cls, '');
    assert.equal((await state('java')).cls, 'hide');
  });

  it('restores zoom and search from the URL', async () => {
    const app = frame('app');
    await page.goto(`${url}?x=${app.x}&y=${app.y}&s=compute`);
    assert.equal((await state('app')).width, '1180.0');
    assert.equal((await state('java')).cls, 'hide');
    assert.equal((await state('compute')).fill, 'rgb(230,0,230)');
    assert.equal(await text('matched'), `Matched: ${((100 * frame('compute').w) / rootWidth).toFixed(1)}%`);
  });

  it('chain graph: search finds waker frames, a click zooms to one', async () => {
    const chainPath = join(dir, 'chain.svg');
    const doc = renderFlameGraph(readLines(fixture('chain.folded')), { colors: 'chain', countname: 'us' }).svg;
    writeFileSync(chainPath, doc);
    const chainFrames = svgFrames(doc).map((f) => f.split('|'));
    const widthOf = (title: string) => Number(chainFrames.find((f) => f[0]!.startsWith(`${title} (`))![3]);
    await page.goto(pathToFileURL(chainPath).href);
    // Waker frames carry "_[w]" only internally: their titles and search names are the plain function names.
    page.once('dialog', (d: { accept: (v: string) => Promise<void> }) => d.accept('^(try_to_wake_up|timer)$'));
    await page.click('#search');
    await page.waitForFunction(() => !document.getElementById('matched')!.classList.contains('hide'));
    // try_to_wake_up 30 of 50 us, timer 8: 76%.
    assert.equal(await text('matched'), 'Matched: 76.0%');
    assert.equal((await state('try_to_wake_up')).fill, 'rgb(230,0,230)');
    assert.notEqual((await state('kworker')).fill, 'rgb(230,0,230)');
    await page.click('#search');
    await page
      .locator('#frames > *')
      .filter({ has: page.locator('title', { hasText: /^kworker \(/ }) })
      .click();
    assert.equal((await state('kworker')).width, '1180.0');
    assert.equal((await state('try_to_wake_up')).width, '1180.0');
    assert.equal((await state('cron')).cls, 'hide');
    assert.equal((await state('sshd')).cls, 'parent');
    assert.ok(widthOf('kworker') < 1180);
  });

  it('chain graph two wakers deep (--chain 2): search across levels, zoom into the second waker, URL state', async () => {
    // A blocked, woken by B (60 us), which was itself woken by C (40 of them); D woken by swapper (40).
    const chainPath = join(dir, 'chain2.svg');
    const folded = [
      'A;main;read;pipe_read;schedule;--;B;write;pipe_write;wake_up_pipe;--;C;kill;signal_wake_up;complete 40',
      'A;main;read;pipe_read;schedule;--;B;write;pipe_write;wake_up_pipe 20',
      'D;start;nanosleep;do_nanosleep;--;swapper;hrtimer_wakeup 40',
    ];
    const doc = renderFlameGraph(folded, { colors: 'chain', countname: 'us' }).svg;
    writeFileSync(chainPath, doc);
    const geometry = svgFrames(doc).map((f) => f.split('|'));
    const original = (title: string) => geometry.find((f) => f[0]!.startsWith(`${title} (`))!;
    const url2 = pathToFileURL(chainPath).href;
    await page.goto(url2);
    // Frames of both waker levels match; a match nested in another counts once.
    page.once('dialog', (d: { accept: (v: string) => Promise<void> }) => d.accept('^(C|complete|wake_up_pipe)$'));
    await page.click('#search');
    await page.waitForFunction(() => !document.getElementById('matched')!.classList.contains('hide'));
    assert.equal(await text('matched'), 'Matched: 60.0%');
    for (const f of ['C', 'complete', 'wake_up_pipe']) assert.equal((await state(f)).fill, 'rgb(230,0,230)', f);
    assert.notEqual((await state('B')).fill, 'rgb(230,0,230)');
    assert.notEqual((await state('swapper')).fill, 'rgb(230,0,230)');
    await page.click('#search');
    assert.equal(await hidden('matched'), true);
    // Zoom into the second-level waker C (40 of 100 us: 472 px of 1180 before).
    assert.equal(original('C')[3], '472.0');
    await page
      .locator('#frames > *')
      .filter({ has: page.locator('title', { hasText: /^C \(/ }) })
      .click();
    assert.equal((await state('C')).width, '1180.0');
    assert.equal((await state('complete')).width, '1180.0');
    for (const f of ['wake_up_pipe', 'B', 'schedule', 'A', 'all']) assert.equal((await state(f)).cls, 'parent', f);
    for (const f of ['D', 'swapper', 'hrtimer_wakeup']) assert.equal((await state(f)).cls, 'hide', f);
    assert.equal(await hidden('unzoom'), false);
    const [, cx, cy] = original('C');
    assert.match(page.url(), new RegExp(`[?&]x=${cx!.replace('.', '\\.')}&y=${cy}`));
    // The URL restores the zoom; Reset Zoom puts every frame back.
    await page.goto(page.url());
    assert.equal((await state('C')).width, '1180.0');
    assert.equal((await state('D')).cls, 'hide');
    await page.click('#unzoom');
    assert.equal((await state('C')).width, '472.0');
    assert.equal((await state('D')).cls, '');
    assert.equal((await state('B')).cls, '');
    assert.doesNotMatch(page.url(), /[?&]x=/);
  });

  it('heat map: hovering a cell shows its time, range, count and column share; leaving clears it', async () => {
    const heatPath = join(dir, 'heatmap.svg');
    const input = new HeatMapInput();
    for (const l of ['TIME LAT', '100 10', '100.2 30', '100.4 30', '101 40', '101.5 60', '102 80', '103 100']) {
      input.line(l);
    }
    writeFileSync(heatPath, renderHeatMap(input, { rows: 4, unitsLabel: 'us', accStats: true }).svg);
    await page.goto(pathToFileURL(heatPath).href);
    const details = () => page.evaluate(() => document.getElementById('details')!.textContent);
    // Column 0 (x 10): 1 event in 0-25 (y 68), 2 in 25-50 (y 60).
    await page.hover('rect[x="10.0"][y="60"]');
    assert.equal(await details(), 'time 0s, range 25-50us, count: 2, colpct: 66%, acc: 3, acc pct: 100%');
    await page.hover('rect[x="10.0"][y="68"]');
    assert.equal(await details(), 'time 0s, range 0-25us, count: 1, colpct: 33%, acc: 1, acc pct: 33%');
    await page.mouse.move(400, 5);
    assert.equal(await details(), ' ');
    writeFileSync(heatPath, renderHeatMap(input, { rows: 4 }).svg);
    await page.goto(pathToFileURL(heatPath).href);
    await page.hover('rect[x="18.0"][y="52"]');
    assert.equal(await details(), 'time 1s, range 50-75, count: 1, colpct: 50%');
  });

  it('histogram heat map (--heatmap of the tools): hover shows the interval, the bucket range and counts', async () => {
    const heatPath = join(dir, 'hist-heatmap.svg');
    const map = {
      rows: ['0-1 usecs', '2-3 usecs', '4-7 usecs'],
      columns: [
        [1, 0, 3],
        [0, 2, 0],
      ],
    };
    writeFileSync(heatPath, renderHistHeatMap(map, { stepSec: 1 }).svg);
    await page.goto(pathToFileURL(heatPath).href);
    const details = () => page.evaluate(() => document.getElementById('details')!.textContent);
    // Height 3 rows * 8 + 36 + 54 = 114; row l at y = 114 - (54 + 8 l); column s at x = 10 + 8 s.
    await page.hover('rect[x="10.0"][y="44"]');
    assert.equal(await details(), 'time 0s, range 4-7 usecs, count: 3, colpct: 75%');
    await page.hover('rect[x="18.0"][y="52"]');
    assert.equal(await details(), 'time 1s, range 2-3 usecs, count: 2, colpct: 100%');
    await page.mouse.move(400, 5);
    assert.equal(await details(), ' ');
  });
});
