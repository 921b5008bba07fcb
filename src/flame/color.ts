/**
 * Frame colours of flame graphs, following flamegraph.pl (FlameGraph commit 41fee1f): the palettes hot (default),
 * mem, io, wakeup, chain, java, js, perl, red, green, blue, aqua, yellow, purple and orange; the differential
 * red/blue scale; and the three ways of choosing the variation within a palette:
 * - default: derived from the name, the way flamegraph.pl does it (it seeds Perl's drand48 with the sum of the
 *   name's code points and draws once), so every name keeps its colour across graphs and our colours equal its;
 * - `hash`: flamegraph.pl's --hash weighting of the first characters of the name and of its reverse;
 * - `random`: really random (Math.random), as --random asks.
 * Colours are "rgb(r,g,b)" strings, as the SVG uses them.
 */

/** Palette names accepted by `--colors`. */
export const PALETTES = [
  'hot',
  'mem',
  'io',
  'wakeup',
  'chain',
  'java',
  'js',
  'perl',
  'red',
  'green',
  'blue',
  'aqua',
  'yellow',
  'purple',
  'orange',
] as const;
export type Palette = (typeof PALETTES)[number];

/** How the variation within a palette is chosen. */
export type ColorMode = 'name' | 'hash' | 'random';

const TWO_48 = 2 ** 48;

/**
 * Perl's `srand(seed); rand(1)` (Perl >= 5.20 has its own drand48: state = seed << 16 | 0x330e, one step of
 * x * 0x5DEECE66D + 0xB mod 2^48, divided by 2^48). `seed` is taken as an unsigned 32-bit integer.
 */
export function perlSeededRand(seed: number): number {
  const x = (BigInt(seed >>> 0) << 16n) + 0x330en;
  const next = (x * 0x5deece66dn + 0xbn) & 0xffffffffffffn;
  return Number(next) / TWO_48;
}

/** Sum of the code points of `name` modulo 2^32 (Perl's `unpack("%32W*", $name)`). */
export function codePointSum(name: string): number {
  let sum = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.codePointAt(i)!;
    if (c > 0xffff) i++;
    sum = (sum + c) >>> 0;
  }
  return sum;
}

/**
 * flamegraph.pl's --hash value in [0, 1]: the first three characters weighted 1, 0.7, 0.49 (code point modulo 10,
 * 11, 12), after removing a "module`" prefix (everything up to the first backtick after the first character).
 */
export function nameHash(name: string): number {
  const tick = name.indexOf('`', 1);
  if (tick >= 0) name = name.slice(tick + 1);
  let vector = 0;
  let weight = 1;
  let max = 1;
  let mod = 10;
  for (const ch of name) {
    const i = ch.codePointAt(0)! % mod;
    vector += (i / (mod++ - 1)) * weight;
    max += weight;
    weight *= 0.7;
    if (mod > 12) break;
  }
  return 1 - vector / max;
}

function reverseCodePoints(s: string): string {
  return Array.from(s).reverse().join('');
}

// Annotations added by stackcollapse-perf --kernel/--jit and by the chain palette.
const JIT = /_\[j\]$/;
const INLINED = /_\[i\]$/;
const KERNEL = /_\[k\]$/;
const JAVA_PACKAGE = /^L?(?:java|javax|jdk|net|org|com|io|sun)\//;

/** The flat palette a multi-palette (java, perl, js, wakeup, chain) picks for `name`; flat palettes map to themselves. */
export function resolvePalette(palette: string, name: string): string {
  switch (palette) {
    case 'java':
      if (JIT.test(name)) return 'green';
      if (INLINED.test(name)) return 'aqua';
      if (JAVA_PACKAGE.test(name)) return 'green';
      if (name.includes(':::')) return 'green'; // perf-map-agent's method separator
      if (name.includes('::')) return 'yellow'; // C++
      if (KERNEL.test(name)) return 'orange';
      return 'red';
    case 'perl':
      if (name.includes('::')) return 'yellow';
      if (name.includes('Perl') || name.includes('.pl')) return 'green';
      if (KERNEL.test(name)) return 'orange';
      return 'red';
    case 'js':
      if (JIT.test(name)) return name.includes('/') ? 'green' : 'aqua';
      if (name.includes('::')) return 'yellow';
      if (/\/.*\.js/s.test(name)) return 'green';
      if (name.includes(':')) return 'aqua';
      if (name === ' ') return 'green'; // missing symbol
      if (name.includes('_[k]')) return 'orange';
      return 'red';
    case 'wakeup':
      return 'aqua';
    case 'chain':
      return name.includes('_[w]') ? 'aqua' : 'blue';
    default:
      return palette;
  }
}

/**
 * The colour of frame `name` in `palette`. v1, v2, v3 are the variation values in [0, 1) (see the module doc);
 * `mode` picks how they are made. Unknown palettes give black, as flamegraph.pl does.
 */
export function frameColor(palette: string, name: string, mode: ColorMode = 'name'): string {
  let v1: number;
  let v2: number;
  let v3: number;
  if (mode === 'hash') {
    v1 = nameHash(name);
    v2 = v3 = nameHash(reverseCodePoints(name));
  } else if (mode === 'random') {
    v1 = Math.random();
    v2 = Math.random();
    v3 = Math.random();
  } else {
    v1 = v2 = v3 = perlSeededRand(codePointSum(name));
  }
  const t = Math.trunc;
  switch (palette) {
    case 'hot':
      return `rgb(${205 + t(50 * v3)},${t(230 * v1)},${t(55 * v2)})`;
    case 'mem':
      return `rgb(0,${190 + t(50 * v2)},${t(210 * v1)})`;
    case 'io': {
      const r = 80 + t(60 * v1);
      return `rgb(${r},${r},${190 + t(55 * v2)})`;
    }
  }
  switch (resolvePalette(palette, name)) {
    case 'red': {
      const x = 50 + t(80 * v1);
      return `rgb(${200 + t(55 * v1)},${x},${x})`;
    }
    case 'green': {
      const x = 50 + t(60 * v1);
      return `rgb(${x},${200 + t(55 * v1)},${x})`;
    }
    case 'blue': {
      const x = 80 + t(60 * v1);
      return `rgb(${x},${x},${205 + t(50 * v1)})`;
    }
    case 'yellow': {
      const x = 175 + t(55 * v1);
      return `rgb(${x},${x},${50 + t(20 * v1)})`;
    }
    case 'purple': {
      const x = 190 + t(65 * v1);
      return `rgb(${x},${80 + t(60 * v1)},${x})`;
    }
    case 'aqua':
      return `rgb(${50 + t(60 * v1)},${165 + t(55 * v1)},${165 + t(55 * v1)})`;
    case 'orange':
      return `rgb(${190 + t(65 * v1)},${90 + t(65 * v1)},0)`;
    default:
      return 'rgb(0,0,0)';
  }
}

/**
 * Differential colour: white for no change, red for growth, blue for reduction, saturated at `maxDelta`
 * (flamegraph.pl's color_scale; `negate` swaps the hues).
 */
export function deltaColor(delta: number, maxDelta: number, negate: boolean): string {
  let r = 255;
  let g = 255;
  let b = 255;
  const v = negate ? -delta : delta;
  if (v > 0) g = b = Math.trunc((210 * (maxDelta - v)) / maxDelta);
  else if (v < 0) r = g = Math.trunc((210 * (maxDelta + v)) / maxDelta);
  return `rgb(${r},${g},${b})`;
}

/** Background gradient (top, bottom) for `--bgcolors`: yellow, blue, green, grey, or a flat "#rrggbb". */
export function backgroundColors(bgcolors: string): [string, string] | null {
  switch (bgcolors) {
    case 'yellow':
      return ['#eeeeee', '#eeeeb0'];
    case 'blue':
      return ['#eeeeee', '#e0e0ff'];
    case 'green':
      return ['#eef2ee', '#e0ffe0'];
    case 'grey':
      return ['#f8f8f8', '#e8e8e8'];
  }
  return /^#[^\n]{6}$/.test(bgcolors) ? [bgcolors, bgcolors] : null;
}

/** The background flamegraph.pl picks for a palette when `--bgcolors` is not given. */
export function defaultBackground(palette: string): string {
  if (palette === 'mem') return 'green';
  if (palette === 'io' || palette === 'wakeup' || palette === 'chain') return 'blue';
  if (['red', 'green', 'blue', 'aqua', 'yellow', 'purple', 'orange'].includes(palette)) return 'grey';
  return 'yellow';
}
