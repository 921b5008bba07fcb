// Utf8LineReader (src/flame/input.ts): flamegraph's input lines from bytes, decoded a run of whole lines at a time.
// Expected lines are literals: what Perl's <> with the :utf8 layer and TextDecoder's replacement rules give.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Utf8LineReader } from '../../src/flame/input.js';

/** Feeds each input as the given pieces (one array per file); returns the lines, `ascii` and `astral`. */
function read(files: (string | number[])[][]): { lines: string[]; ascii: boolean; astral: boolean } {
  const lines: string[] = [];
  const r = new Utf8LineReader((t, s, e) => lines.push(t.slice(s, e)));
  for (const pieces of files) {
    for (const p of pieces) {
      // A reused buffer, as readInputs passes: overwritten after each push.
      const bytes = typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p);
      const reused = Buffer.alloc(bytes.length + 8, 0x41);
      bytes.copy(reused);
      r.push(reused.subarray(0, bytes.length));
      reused.fill(0x5a);
    }
    r.end();
  }
  return { lines, ascii: r.ascii, astral: r.astral };
}

describe('Utf8LineReader', () => {
  it('splits lines, keeps a last line without "\\n", and never joins lines across files', () => {
    assert.deepEqual(read([['a;b 1\nc 2\nd 3'], ['e 4\n']]).lines, ['a;b 1', 'c 2', 'd 3', 'e 4']);
  });
  it('joins lines cut by chunk ends, including a line longer than a chunk', () => {
    const r = read([['a;', 'b 1\nc', ';d', ';e 2\n', 'f 3']]);
    assert.deepEqual(r.lines, ['a;b 1', 'c;d;e 2', 'f 3']);
    assert.equal(r.ascii, true);
  });
  it('keeps "\\r" (CRLF input) as part of the line, as Perl does', () => {
    assert.deepEqual(read([['a 1\r\n', 'b 2\r\n']]).lines, ['a 1\r', 'b 2\r']);
  });
  it('gives empty lines and a tiny input', () => {
    assert.deepEqual(read([['\n\nx']]).lines, ['', '', 'x']);
    assert.deepEqual(read([['1']]).lines, ['1']);
    assert.deepEqual(read([[]]).lines, []);
  });
  it('removes a byte-order mark at the start of each file only', () => {
    const bom = [0xef, 0xbb, 0xbf];
    const r = read([[[...bom, 0x61, 0x20, 0x31, 0x0a, ...bom, 0x62, 0x0a]], [bom, [0x63, 0x0a]]]);
    assert.deepEqual(r.lines, ['a 1', '\ufeffb', 'c']);
    assert.equal(r.ascii, false); // the second BOM is text
  });
  it('decodes UTF-8 split across chunks, and marks the input as not ASCII', () => {
    // "é" is C3 A9; "€" is E2 82 AC; the chunks cut inside both.
    const r = read([
      [
        [0x63, 0x61, 0x66, 0xc3],
        [0xa9, 0x20, 0x31, 0x0a, 0xe2, 0x82],
        [0xac, 0x20, 0x32, 0x0a],
      ],
    ]);
    assert.deepEqual(r.lines, ['café 1', '€ 2']);
    assert.equal(r.ascii, false);
    assert.equal(r.astral, false);
  });
  it('sees a character beyond U+FFFF (a 4-byte sequence) as astral', () => {
    const r = read([['f😀 1\n']]);
    assert.deepEqual(r.lines, ['f\u{1f600} 1']);
    assert.equal(r.astral, true);
  });
  it('replaces malformed bytes with U+FFFD, a truncated sequence at a line end included', () => {
    const r = read([[[0x61, 0xff, 0x62, 0x0a, 0xe2, 0x82, 0x0a, 0x63, 0xe2]]]);
    assert.deepEqual(r.lines, ['a\ufffdb', '\ufffd', 'c\ufffd']);
  });
  it('tells ASCII input from input whose only non-ASCII line spans two chunks', () => {
    // The chunk holds "x 1\n" then the first byte of "é"; its line, completed by the next chunk, is not ASCII.
    const r = read([
      [
        [0x78, 0x20, 0x31, 0x0a, 0xc3],
        [0xa9, 0x0a],
      ],
    ]);
    assert.deepEqual(r.lines, ['x 1', 'é']);
    assert.equal(r.ascii, false);
    assert.equal(read([[[0x78, 0x0a, 0xc3], [0xa9]], ['y\n']]).ascii, false);
    assert.equal(read([['x 1\ny', ' 2\n']]).ascii, true);
  });
});
