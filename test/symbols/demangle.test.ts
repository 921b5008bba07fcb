import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEMANGLE_PACKAGE, demangle, demanglerStatus, isMangled, loadDemangler } from '../../src/symbols/demangle.js';

// The package is optional (see src/symbols/demangle.ts): tests that need it skip, saying so, when it is absent.
const loaded = await loadDemangler();

describe('demangle', () => {
  it('recognizes mangled names', () => {
    assert.equal(isMangled('_ZN3foo3barEv'), true);
    assert.equal(isMangled('_RNvCs1234_7mycrate3foo'), true);
    assert.equal(isMangled('main'), false);
    assert.equal(isMangled('_Z'), false);
    assert.equal(isMangled('__libc_start_main'), false);
  });

  it('leaves plain C names alone, loaded or not', () => {
    for (const n of ['main', 'do_nanosleep', '_start', '__libc_start_call_main', '_GLOBAL__sub_I_main']) {
      assert.equal(demangle(n), n);
    }
  });

  it('reports its status', () => {
    const s = demanglerStatus();
    assert.equal(s.loaded, loaded);
    if (!loaded) assert.match(s.reason!, new RegExp(DEMANGLE_PACKAGE));
  });

  it(
    'returns mangled names unchanged when the package is absent',
    {
      skip: loaded && 'the package is installed',
    },
    () => {
      assert.equal(demangle('_ZN3foo3barEv'), '_ZN3foo3barEv');
    },
  );

  it(
    'demangles C++ (Itanium) names as c++filt does',
    {
      skip: !loaded && `${DEMANGLE_PACKAGE} is not installed`,
    },
    () => {
      const cases: [string, string][] = [
        ['_ZN3foo3barEv', 'foo::bar()'],
        ['_Z3addii', 'add(int, int)'],
        ['_ZN8bpfscope6Widget7computeEi', 'bpfscope::Widget::compute(int)'],
        ['_ZNSt6vectorIiSaIiEE9push_backERKi', 'std::vector<int, std::allocator<int> >::push_back(int const&)'],
        ['_ZL5localv', 'local()'],
        ['_Z1fv.isra.0', 'f() [clone .isra.0]'],
      ];
      for (const [m, d] of cases) assert.equal(demangle(m), d, m);
    },
  );

  it(
    'demangles Rust legacy (hash dropped) and v0 names',
    {
      skip: !loaded && `${DEMANGLE_PACKAGE} is not installed`,
    },
    () => {
      assert.equal(demangle('_ZN4core3fmt9Formatter3pad17h0123456789abcdefE'), 'core::fmt::Formatter::pad');
      assert.equal(demangle('_RNvCs1234_7mycrate3foo'), 'mycrate::foo');
      assert.equal(demangle('_RNvNtCs1234_7mycrate3bar3baz'), 'mycrate::bar::baz');
    },
  );

  it('returns undemanglable names unchanged', { skip: !loaded && `${DEMANGLE_PACKAGE} is not installed` }, () => {
    assert.equal(demangle('_Zbogus'), '_Zbogus');
    assert.equal(demangle('_R!!'), '_R!!');
  });
});
