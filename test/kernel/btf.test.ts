import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, test } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { Btf, BtfKind } from '../../src/kernel/btf.js';

// ---------------------------------------------------------------------------------------------------------------
// A hand-built BTF blob covering every kind (Documentation/bpf/btf.rst layouts).

class BtfBuilder {
  private strs: Buffer[] = [Buffer.of(0)];
  private strLen = 1;
  private words: number[] = [];
  str(s: string): number {
    if (s === '') return 0;
    const off = this.strLen;
    const b = Buffer.from(`${s}\0`);
    this.strs.push(b);
    this.strLen += b.length;
    return off;
  }
  type(name: string, kind: number, vlen: number, sizeOrType: number, extra: number[] = [], kflag = false): this {
    this.words.push(this.str(name), ((kflag ? 1 : 0) << 31) | (kind << 24) | vlen, sizeOrType, ...extra);
    return this;
  }
  build(): Buffer {
    const types = Buffer.alloc(this.words.length * 4);
    this.words.forEach((w, i) => types.writeUInt32LE(w >>> 0, i * 4));
    const strings = Buffer.concat(this.strs);
    const hdr = Buffer.alloc(24);
    hdr.writeUInt16LE(0xeb9f, 0);
    hdr[2] = 1;
    hdr.writeUInt32LE(24, 4);
    hdr.writeUInt32LE(0, 8);
    hdr.writeUInt32LE(types.length, 12);
    hdr.writeUInt32LE(types.length, 16);
    hdr.writeUInt32LE(strings.length, 20);
    return Buffer.concat([hdr, types, strings]);
  }
}

function sample(): Btf {
  const b = new BtfBuilder();
  const n = (s: string) => b.str(s);
  b.type('int', BtfKind.INT, 0, 4, [(1 << 24) | 32]) // 1: signed 32-bit
    .type('', BtfKind.PTR, 0, 3) // 2: struct foo *
    // 3: struct foo { int a; union { int x; int y; }; int bf:3 @ bit 96; } (kind_flag: bitfield encoding)
    .type('foo', BtfKind.STRUCT, 3, 16, [n('a'), 1, 0, 0, 4, 32, n('bf'), 1, (3 << 24) | 96], true)
    .type('', BtfKind.UNION, 2, 4, [n('x'), 1, 0, n('y'), 1, 0]) // 4
    .type('foo_t', BtfKind.TYPEDEF, 0, 3) // 5
    .type('', BtfKind.CONST, 0, 5) // 6
    .type('e', BtfKind.ENUM, 2, 4, [n('A'), 1, n('B'), 0xffffffff], true) // 7: signed enum
    .type('', BtfKind.FUNC_PROTO, 3, 1, [n('a'), 1, 0, 2, 0, 0]) // 8: int (int a, struct foo *, ...)
    .type('f', BtfKind.FUNC, 0, 8) // 9
    .type('', BtfKind.ARRAY, 0, 0, [1, 1, 4]) // 10: int[4]
    .type('e64', BtfKind.ENUM64, 1, 8, [n('BIG'), 2, 1]) // 11: BIG = 0x1_0000_0002
    .type('foo', BtfKind.FWD, 0, 0) // 12
    .type('v', BtfKind.VAR, 0, 1, [1]) // 13
    .type('tag', BtfKind.DECL_TAG, 0, 3, [0xffffffff]) // 14
    .type('user', BtfKind.TYPE_TAG, 0, 1) // 15
    .type('double', BtfKind.FLOAT, 0, 8) // 16
    .type('.data', BtfKind.DATASEC, 1, 4, [13, 0, 4]); // 17
  return new Btf(b.build());
}

test('synthetic BTF: every kind parses and ids line up', () => {
  const btf = sample();
  assert.equal(btf.count, 17);
  assert.equal(btf.kind(16), BtfKind.FLOAT);
  assert.equal(btf.name(17), '.data');
  assert.equal(btf.name(0), 'void');
});

test('synthetic BTF: lookups by name and kind; definitions win over FWD', () => {
  const btf = sample();
  assert.deepEqual(btf.findTypes('foo'), [3, 12]);
  assert.equal(btf.findType('foo'), 3);
  assert.equal(btf.findType('foo', BtfKind.FWD), 12);
  assert.equal(btf.findType('fo'), undefined);
  assert.equal(btf.findType('foo_t'), 5);
  assert.equal(btf.typedefId('foo_t'), 5);
  assert.equal(btf.findType('nope'), undefined);
  // Past 8 distinct names the full name hash takes over; answers stay the same.
  for (let i = 0; i < 40; i++) btf.findType(`missing${i}`);
  assert.deepEqual(btf.findTypes('foo'), [3, 12]);
  assert.deepEqual(btf.findTypes('int'), [1]);
  assert.deepEqual(btf.findTypes('e64', BtfKind.ENUM64), [11]);
});

test('synthetic BTF: members with anonymous unions flattened, bitfields, resolve, sizes', () => {
  const btf = sample();
  assert.deepEqual(
    btf.members(6).map((m) => [m.name, m.typeId, m.bitOffset, m.bitSize, m.offset]),
    [
      ['a', 1, 0, 0, 0],
      ['x', 1, 32, 0, 4],
      ['y', 1, 32, 0, 4],
      ['bf', 1, 96, 3, 12],
    ],
  );
  assert.deepEqual(
    btf.members(3, { flatten: false }).map((m) => m.name),
    ['a', '', 'bf'],
  );
  assert.equal(btf.member(3, 'y')?.offset, 4);
  assert.equal(btf.member(3, 'zz'), undefined);
  assert.equal(btf.resolve(6), 3);
  assert.equal(btf.resolve(6, { typedef: false }), 5);
  assert.equal(btf.resolve(6, { qualifiers: false }), 6);
  assert.equal(btf.resolve(15), 1);
  assert.equal(btf.sizeOf(6), 16);
  assert.equal(btf.sizeOf(2), 8);
  assert.equal(btf.sizeOf(10), 16);
  assert.equal(btf.sizeOf(13), 4);
  assert.equal(btf.sizeOf(9), 0);
  assert.throws(() => btf.members(1), BpfscopeError);
  assert.throws(() => btf.kind(18), BpfscopeError);
});

test('synthetic BTF: enums, function prototypes, C spellings', () => {
  const btf = sample();
  assert.deepEqual(btf.enumValues(7), [
    { name: 'A', value: 1n },
    { name: 'B', value: -1n },
  ]);
  assert.deepEqual(btf.enumValues(11), [{ name: 'BIG', value: 0x1_0000_0002n }]);
  assert.deepEqual(btf.funcProto(9), {
    returnTypeId: 1,
    params: [
      { name: 'a', typeId: 1 },
      { name: '', typeId: 2 },
    ],
    variadic: true,
  });
  assert.equal(btf.typeName(2), 'struct foo *');
  assert.equal(btf.typeName(6), 'const foo_t');
  assert.equal(btf.typeName(10), 'int[4]');
  assert.equal(btf.typeName(9), 'int f(int, struct foo *, ...)');
  assert.equal(btf.typeName(12), 'struct foo');
  assert.equal(btf.typeName(0), 'void');
});

test('malformed BTF is refused with a BpfscopeError', () => {
  const good = new BtfBuilder().type('int', BtfKind.INT, 0, 4, [32]).build();
  const badMagic = Buffer.from(good);
  badMagic.writeUInt16LE(0x1234, 0);
  assert.throws(() => new Btf(badMagic), /bad magic/);
  const truncated = good.subarray(0, good.length - 4);
  assert.throws(() => new Btf(truncated), BpfscopeError);
  // A type count that does not end on a record boundary: claim one word more in the type section.
  const skewed = Buffer.from(good);
  skewed.writeUInt32LE(skewed.readUInt32LE(12) - 4, 12);
  assert.throws(() => new Btf(skewed), /boundary/);
});

// ---------------------------------------------------------------------------------------------------------------
// The running kernel's BTF against bpftool's raw dump.

let raw: string[] = [];
before(() => {
  raw = execFileSync('bpftool', ['btf', 'dump', 'file', '/sys/kernel/btf/vmlinux', 'format', 'raw'], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  }).split('\n');
});

/** bpftool's header line and member lines of the first type `kind 'name'`. */
function bpftoolType(kind: string, name: string): { id: number; header: string; members: string[] } {
  const i = raw.findIndex((l) => l.includes(`] ${kind} '${name}' `));
  assert.ok(i >= 0, `${kind} ${name} not in bpftool output`);
  const members: string[] = [];
  for (let j = i + 1; j < raw.length && raw[j]!.startsWith('\t'); j++) members.push(raw[j]!.trim());
  return { id: Number(/^\[(\d+)\]/.exec(raw[i]!)![1]), header: raw[i]!, members };
}

test('vmlinux BTF: load and the first lookups are fast; type count matches bpftool', (t) => {
  const t0 = performance.now();
  const btf = Btf.vmlinux();
  const tLoad = performance.now() - t0;
  const t1 = performance.now();
  const ts = btf.findType('task_struct', BtfKind.STRUCT);
  const tFind = performance.now() - t1;
  const t2 = performance.now();
  btf.btfTraceArgs('sched_switch');
  const tArgs = performance.now() - t2;
  t.diagnostic(
    `read+index ${tLoad.toFixed(1)} ms, first findType ${tFind.toFixed(1)} ms, tp args ${tArgs.toFixed(1)} ms`,
  );
  assert.ok(ts !== undefined);
  const last = [...raw].reverse().find((l) => l.startsWith('['))!;
  assert.equal(btf.count, Number(/^\[(\d+)\]/.exec(last)![1]));
  assert.equal(Btf.vmlinux(), btf, 'cached per process');
});

test('vmlinux BTF: task_struct and its pid member agree with bpftool', () => {
  const btf = Btf.vmlinux();
  const ref = bpftoolType('STRUCT', 'task_struct');
  const id = btf.findType('task_struct', BtfKind.STRUCT)!;
  assert.equal(id, ref.id);
  assert.equal(btf.sizeOf(id), Number(/size=(\d+)/.exec(ref.header)![1]));
  const pidLine = ref.members.find((m) => m.startsWith("'pid' "))!;
  const bits = Number(/bits_offset=(\d+)/.exec(pidLine)![1]);
  const pid = btf.member(id, 'pid')!;
  assert.equal(pid.bitOffset, bits);
  assert.equal(pid.offset, bits / 8);
  assert.equal(pid.typeId, Number(/type_id=(\d+)/.exec(pidLine)![1]));
  assert.equal(btf.typeName(pid.typeId), 'pid_t');
  assert.equal(btf.sizeOf(pid.typeId), 4);
  assert.equal(btf.typeName(btf.member(id, 'comm')!.typeId), 'char[16]');
});

test('vmlinux BTF: tp_btf arguments of sched_switch and the btf_trace typedef id', () => {
  const btf = Btf.vmlinux();
  const args = btf.btfTraceArgs('sched_switch')!;
  assert.deepEqual(
    args.map((a) => a.name),
    ['preempt', 'prev', 'next', 'prev_state'],
  );
  assert.deepEqual(
    args.map((a) => btf.typeName(a.typeId)),
    ['bool', 'struct task_struct *', 'struct task_struct *', 'unsigned int'],
  );
  assert.equal(btf.typedefId('btf_trace_sched_switch'), bpftoolType('TYPEDEF', 'btf_trace_sched_switch').id);
  assert.equal(btf.btfTraceArgs('no_such_tracepoint'), undefined);
});

test('vmlinux BTF: enum values (enum bpf_map_type)', () => {
  const btf = Btf.vmlinux();
  const vals = btf.enumValues(btf.findType('bpf_map_type', BtfKind.ENUM)!);
  assert.equal(vals.find((v) => v.name === 'BPF_MAP_TYPE_RINGBUF')?.value, 27n);
  assert.equal(vals.find((v) => v.name === 'BPF_MAP_TYPE_HASH')?.value, 1n);
});
