/**
 * docs/language.md's builtin tables are generated from the registry (src/lang/builtins/doc.ts,
 * `npm run docs:language`): the committed file must be what the generator writes now.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { BUILTIN_FUNCTIONS, BUILTIN_VARIABLES } from '../../src/lang/builtins/registry.js';
import { builtinDocSections, DOC_BEGIN, DOC_END, withBuiltinDocSections } from '../../src/lang/builtins/doc.js';

const doc = readFileSync(new URL('../../../docs/language.md', import.meta.url), 'utf8');

describe('docs/language.md builtin tables', () => {
  it('are the generated ones (run npm run docs:language after changing src/lang/builtins/)', () => {
    assert.equal(doc, withBuiltinDocSections(doc));
  });

  it('list every registered builtin once, with its status', () => {
    const text = builtinDocSections();
    assert.ok(text.startsWith(`${DOC_BEGIN}\n`) && text.endsWith(`${DOC_END}\n`));
    const rows = text.split('\n').filter((l) => l.startsWith('| `'));
    assert.equal(rows.length, BUILTIN_FUNCTIONS.size + BUILTIN_VARIABLES.size);
    // rows written out here, not derived from the registry
    assert.ok(rows.includes('| `cgroupid("path")` | yes | compile time: the cgroup v2 directory\'s inode number |'));
    assert.ok(rows.includes('| `strstr()` | not yet | |'));
    assert.ok(rows.some((r) => r.startsWith('| `override(rc)` | impossible | neither test kernel has')));
    assert.ok(
      rows.includes(
        '| `nsecs(monotonic\\|boot\\|tai\\|sw_tai)` | yes | `sw_tai` reads CLOCK_TAI directly, which the helper offers on the kernels bpfscope supports |',
      ),
    );
  });

  it('fail loudly when the markers are missing', () => {
    assert.throws(() => withBuiltinDocSections('# no markers\n'), /no generated builtins markers/);
  });
});
