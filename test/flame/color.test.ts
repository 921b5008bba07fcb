import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  codePointSum,
  deltaColor,
  frameColor,
  nameHash,
  perlSeededRand,
  resolvePalette,
} from '../../src/flame/color.js';

describe('colour derivation', () => {
  it("perlSeededRand equals Perl's srand(n); rand(1)", () => {
    assert.equal(perlSeededRand(0), 0.17082803610628972); // perl -e 'srand(0); print rand(1)': 0.17082803610629
    assert.equal(perlSeededRand(97).toPrecision(15), '0.638651976668374');
  });
  it('codePointSum sums code points (unpack "%32W*")', () => {
    assert.equal(codePointSum('ab'), 195);
    assert.equal(codePointSum('λ'), 0x3bb);
    assert.equal(codePointSum('😀'), 0x1f600);
  });
  it('hot colours of names match flamegraph.pl', () => {
    assert.equal(frameColor('hot', ''), 'rgb(213,39,9)');
    // Annotated names as in the reference SVGs (the annotation takes part in the colour).
    assert.equal(frameColor('hot', 'tcp_transmit_skb_[k]'), 'rgb(215,48,11)');
    assert.equal(frameColor('hot', 'x86_pmu_enable_[k]'), 'rgb(250,209,50)');
  });
  it('--hash weights the first characters', () => {
    // a: 97 % 10 = 7 (/9, weight 1); b: 98 % 11 = 10 (/10, weight 0.7); c: 99 % 12 = 3 (/11, weight 0.49).
    assert.equal(nameHash('abc'), 1 - (7 / 9 + (10 / 10) * 0.7 + (3 / 11) * (0.7 * 0.7)) / (1 + 1 + 0.7 + 0.7 * 0.7));
    assert.equal(nameHash('libc.so`malloc'), nameHash('malloc'));
  });
  it('multi-palettes pick flat palettes by name', () => {
    assert.equal(resolvePalette('java', 'foo_[j]'), 'green');
    assert.equal(resolvePalette('java', 'foo_[i]'), 'aqua');
    assert.equal(resolvePalette('java', 'Ljava/lang/Thread:.run'), 'green');
    assert.equal(resolvePalette('java', 'JavaThread::run'), 'yellow');
    assert.equal(resolvePalette('java', 'tcp_sendmsg_[k]'), 'orange');
    assert.equal(resolvePalette('java', 'memcpy'), 'red');
    assert.equal(resolvePalette('js', 'LazyCompile:*f /a.js:1_[j]'), 'green');
    assert.equal(resolvePalette('js', 'Builtin:Map_[j]'), 'aqua');
    assert.equal(resolvePalette('js', ' '), 'green');
    assert.equal(resolvePalette('perl', 'Perl_pp_entersub'), 'green');
    assert.equal(resolvePalette('chain', 'wake_up_[w]'), 'aqua');
    assert.equal(resolvePalette('chain', 'schedule'), 'blue');
    assert.equal(resolvePalette('wakeup', 'x'), 'aqua');
  });
  it('differential scale', () => {
    assert.equal(deltaColor(0, 10, false), 'rgb(255,255,255)');
    assert.equal(deltaColor(10, 10, false), 'rgb(255,0,0)');
    assert.equal(deltaColor(-5, 10, false), 'rgb(105,105,255)');
    assert.equal(deltaColor(-5, 10, true), 'rgb(255,105,105)');
  });
  it('unknown palettes are black, as in flamegraph.pl', () => {
    assert.equal(frameColor('nosuch', 'x'), 'rgb(0,0,0)');
  });
});
