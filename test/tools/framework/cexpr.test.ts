/**
 * framework/cexpr.ts: bcc's C expressions (trace/argdist predicates and arguments) as bpftrace expressions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  convertTo,
  paramExpr,
  parseCType,
  parseSignature,
  tokenizeC,
  translateCExpr,
  typedValue,
} from '../../../src/tools/framework/cexpr.js';

const names = (n: string): string | undefined =>
  ({ arg1: 'arg0', arg2: 'arg1', retval: 'retval', ts: '((struct timespec *)arg0)', $PID: 'pid' })[n];

describe('cexpr', () => {
  it('tokenizes C and gives the text back', () => {
    const text = `a->b <<= 0x10UL && s == "x\\"y" || c != 'q'`;
    const toks = tokenizeC(text);
    assert.equal(toks.map((t) => t.text).join(''), text);
    assert.deepEqual(
      toks.filter((t) => t.kind !== 'ws').map((t) => t.text),
      ['a', '->', 'b', '<<=', '0x10UL', '&&', 's', '==', '"x\\"y"', '||', 'c', '!=', "'q'"],
    );
    assert.throws(() => tokenizeC('"open'), /unterminated string/);
  });

  it('C types: integers by width and sign, strings, struct pointers, other pointers', () => {
    assert.deepEqual(parseCType('unsigned long'), { kind: 'int', bits: 64, signed: false });
    assert.deepEqual(parseCType('int'), { kind: 'int', bits: 32, signed: true });
    assert.deepEqual(parseCType('u16'), { kind: 'int', bits: 16, signed: false });
    assert.deepEqual(parseCType('size_t'), { kind: 'int', bits: 64, signed: false });
    assert.deepEqual(parseCType('const char *'), { kind: 'string' });
    assert.deepEqual(parseCType('char*'), { kind: 'string' });
    assert.deepEqual(parseCType('struct timespec *'), { kind: 'record', text: 'struct timespec *' });
    assert.deepEqual(parseCType('void *'), { kind: 'pointer' });
    assert.deepEqual(parseCType('int **'), { kind: 'pointer' });
    assert.equal(parseCType('struct timespec'), undefined);
    assert.equal(parseCType('my_type_t'), undefined);
  });

  it("signatures split as argdist's _parse_signature", () => {
    assert.deepEqual(parseSignature('struct timespec *req, int fd,const char* buf, size_t count'), [
      { type: 'struct timespec *', name: 'req' },
      { type: 'int', name: 'fd' },
      { type: 'const char*', name: 'buf' },
      { type: 'size_t', name: 'count' },
    ]);
    assert.deepEqual(parseSignature(''), []);
  });

  it('parameters and typed values', () => {
    assert.equal(paramExpr(1, 'int'), '(int32)arg1');
    assert.equal(paramExpr(0, 'struct sock *'), '((struct sock *)arg0)');
    assert.equal(paramExpr(2, 'const char *'), 'arg2');
    assert.throws(() => paramExpr(6, 'int'), /first six/);
    assert.throws(() => paramExpr(0, 'foo_t'), /unsupported parameter type 'foo_t'/);
    assert.equal(typedValue('u32', '@x[tid]'), '(uint32)@x[tid]');
    assert.equal(convertTo({ kind: 'int', bits: 16, signed: true }, 'a', 80), '(int16)(a)');
    assert.equal(convertTo({ kind: 'string' }, 'a', 80), 'str(a, 80)');
  });

  it('translates names, casts, literals and STRCMP', () => {
    const tr = (e: string): string => translateCExpr(e, { names, entry: (p) => (p === 'n' ? '@e[tid]' : undefined) });
    assert.equal(tr('(arg1 == 42)'), '((arg0) == 42)');
    assert.equal(tr('ts->tv_nsec'), '(((struct timespec *)arg0))->tv_nsec');
    // Member names are never replaced.
    assert.equal(tr('args->arg1'), 'args->arg1');
    assert.equal(tr('(char*)retval'), '(retval)');
    assert.equal(tr("(unsigned int)$PID + 'a' - 10UL"), '(uint32)(pid) + 97 - 10');
    assert.equal(tr('(struct sock *)arg2'), '(struct sock *)(arg1)');
    assert.equal(tr('(void *)arg2'), '(uint64)(arg1)');
    assert.equal(tr('arg2@user'), '(arg1)');
    assert.equal(tr('STRCMP("foo", arg1) && x'), '(strncmp(str((arg0)), "foo", 3) == 0) && x');
    assert.equal(tr('$entry(n) / 2'), '(@e[tid]) / 2');
    assert.throws(() => tr('$entry(zz)'), /\$entry\(zz\): no such param/);
    assert.throws(() => tr('STRCMP(arg1, "x")'), /STRCMP takes a string literal/);
  });
});
