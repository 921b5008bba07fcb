import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { numPossibleCpus, onlineCpus, parseCpuList, possibleCpus } from '../../src/kernel/cpus.js';

test('parseCpuList: single CPUs, ranges, mixtures, blanks', () => {
  assert.deepEqual(parseCpuList('0\n'), [0]);
  assert.deepEqual(parseCpuList('0-3'), [0, 1, 2, 3]);
  assert.deepEqual(parseCpuList('0-1,4,6-7\n'), [0, 1, 4, 6, 7]);
  assert.deepEqual(parseCpuList('4,0-1'), [0, 1, 4]);
  assert.deepEqual(parseCpuList('1,1-2'), [1, 2]);
  assert.deepEqual(parseCpuList(''), []);
  assert.deepEqual(parseCpuList(' \n'), []);
  for (const bad of ['a', '1-', '3-1', '0,,1', '0-2:1/2']) assert.throws(() => parseCpuList(bad), BpfscopeError, bad);
});

test('possible and online CPUs from sysfs', () => {
  const text = readFileSync('/sys/devices/system/cpu/possible', 'utf8');
  assert.deepEqual(possibleCpus(), parseCpuList(text));
  assert.equal(numPossibleCpus(), Math.max(...possibleCpus()) + 1);
  const online = onlineCpus();
  assert.ok(online.length >= 1);
  for (const c of online) assert.ok(possibleCpus().includes(c));
});
