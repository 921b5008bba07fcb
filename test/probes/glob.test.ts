import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { globMatch, hasWildcard } from '../../src/probes/glob.js';

describe('glob', () => {
  it('detects wildcards', () => {
    assert.equal(hasWildcard('sys_enter_*'), true);
    assert.equal(hasWildcard('a?c'), true);
    assert.equal(hasWildcard('a[bc]'), true);
    assert.equal(hasWildcard('sched:sched_switch'), false);
    assert.equal(hasWildcard('a[b'), false);
  });
  it('matches *, ?, sets and literals', () => {
    assert.equal(globMatch('sched:sched_*', 'sched:sched_switch'), true);
    assert.equal(globMatch('sched:sched_*', 'xsched:sched_switch'), false);
    assert.equal(globMatch('*:sched_switch', 'sched:sched_switch'), true);
    assert.equal(globMatch('s*h', 'sched:sched_switch'), true); // * spans ':' as in bpftrace
    assert.equal(globMatch('sys_e?it', 'sys_exit'), true);
    assert.equal(globMatch('sys_e?it', 'sys_exxit'), false);
    assert.equal(globMatch('openat[2]', 'openat2'), true);
    assert.equal(globMatch('openat[!2]', 'openat2'), false);
    assert.equal(globMatch('x[a-c]', 'xb'), true);
    assert.equal(globMatch('a.b', 'aXb'), false);
    assert.equal(globMatch('a+b(c)', 'a+b(c)'), true);
  });
});
