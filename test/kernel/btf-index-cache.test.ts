/**
 * The per-boot file of the vmlinux BTF type index (src/kernel/btf-index-cache.ts): a first start writes it, a later
 * start uses it without rewriting it and finds the same type ids as bpftool (ids recorded from `bpftool btf dump
 * file /sys/kernel/btf/vmlinux` on this machine's kernel are not literals here because they change with the kernel
 * build, so bpftool is run for them), and a file that is not this BTF's, fails a spot check or is writable by others
 * is not used (the start indexes again and rewrites it). Each start is a fresh node process (the vmlinux BTF is
 * cached per process).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const NAMES = ['task_struct', 'sk_buff', 'pid_t', 'sock', 'trace_event_raw_sched_switch'];
const btfJs = fileURLToPath(new URL('../../src/kernel/btf.js', import.meta.url));
const cacheJs = fileURLToPath(new URL('../../src/kernel/btf-index-cache.js', import.meta.url));

/** bpftool's id of each of NAMES (the first type of that name, as `findType` returns). */
function bpftoolIds(): Record<string, number> {
  const dump = execFileSync('bpftool', ['btf', 'dump', 'file', '/sys/kernel/btf/vmlinux'], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  const ids: Record<string, number> = {};
  for (const m of dump.matchAll(/^\[(\d+)\] [A-Z_]+ '([^']+)'/gm)) {
    if (NAMES.includes(m[2]!) && ids[m[2]!] === undefined) ids[m[2]!] = Number(m[1]);
  }
  return ids;
}

/** A fresh process's `Btf.vmlinux()`: its count and the ids of NAMES, with the index file in `dir`. */
function start(dir: string): { count: number; ids: Record<string, number> } {
  const src = `
    const { Btf } = await import(${JSON.stringify(btfJs)});
    const { setVmlinuxIndexDir } = await import(${JSON.stringify(cacheJs)});
    setVmlinuxIndexDir(${JSON.stringify(dir)});
    const b = Btf.vmlinux();
    const ids = {};
    for (const n of ${JSON.stringify(NAMES)}) ids[n] = b.findType(n);
    console.log(JSON.stringify({ count: b.count, ids }));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', src], { encoding: 'utf8' })) as {
    count: number;
    ids: Record<string, number>;
  };
}

describe('vmlinux BTF index file', () => {
  const root = mkdtempSync(join(tmpdir(), 'bpfscope-btfidx-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const expected = bpftoolIds();
  const dir = join(root, 'btf');
  const size = statSync('/sys/kernel/btf/vmlinux').size;
  const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
  const file = join(dir, `vmlinux-${boot}-${size}.idx`);

  it('a first start writes it, owner-only; a later start reads it unchanged and finds the ids bpftool shows', () => {
    assert.equal(Object.keys(expected).length, NAMES.length, 'bpftool lists every name');
    const first = start(dir);
    assert.deepEqual(first.ids, expected);
    assert.deepEqual(readdirSync(dir), [`vmlinux-${boot}-${size}.idx`]);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const written = statSync(file);
    // count + 1 words of offsets and as many of name offsets after a 10-word header
    assert.equal(written.size, 40 + 8 * (first.count + 1));
    const second = start(dir);
    assert.deepEqual(second, first);
    const again = statSync(file);
    assert.equal(again.ino, written.ino, 'not rewritten');
    assert.equal(again.mtimeMs, written.mtimeMs);
  });

  it('a file whose spot checks fail, whose header is not this BTF or that others may write is not used', () => {
    const good = readFileSync(file);
    // offs[1] (word 11) no longer at the type section's start: a hit would give every id a wrong record
    const badOffs = Buffer.from(good);
    badOffs.writeUInt32LE(badOffs.readUInt32LE(44) + 3, 44);
    // the BTF header's str_len (word 3 + 5)
    const badHeader = Buffer.from(good);
    badHeader.writeUInt32LE(badHeader.readUInt32LE(32) + 4, 32);
    // one word short
    const short = good.subarray(0, good.length - 4);
    for (const [what, bytes] of [
      ['offsets', badOffs],
      ['header', badHeader],
      ['length', short],
    ] as const) {
      writeFileSync(file, bytes, { mode: 0o600 });
      const ino = statSync(file).ino;
      assert.deepEqual(start(dir).ids, expected, what);
      assert.notEqual(statSync(file).ino, ino, `${what}: rewritten`);
      assert.ok(readFileSync(file).equals(good), `${what}: the right index stored again`);
    }
    chmodSync(file, 0o620);
    const ino = statSync(file).ino;
    assert.deepEqual(start(dir).ids, expected);
    assert.notEqual(statSync(file).ino, ino, 'group-writable: rewritten');
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it("another boot's or size's file is removed on a write", () => {
    const other = join(dir, `vmlinux-00000000-0000-0000-0000-000000000000-${size}.idx`);
    writeFileSync(other, readFileSync(file), { mode: 0o600 });
    rmSync(file);
    assert.deepEqual(start(dir).ids, expected);
    assert.deepEqual(readdirSync(dir), [`vmlinux-${boot}-${size}.idx`]);
  });
});
