// The layering rule of bpfscope's src/, checked by dependency-cruiser (`npm run depcheck`, part of `npm test`;
// test/arch/layering.test.ts). docs/architecture.md explains the layers.
//
// LAYERS lists src/'s layers from the bottom up; the layers on one line share a level. A module may import its own
// layer and the layers on lower lines, never a layer on its own line or above: an upward import is an error, and so
// is an import cycle between modules (type-only imports count: they couple the modules as much as value imports).

/** [name, path regular expression] per layer, lowest level first; layers on one line share a level. */
const LAYERS = [
  [['base', '^src/(errors|builtins)[.]ts$']],
  [
    ['kernel', '^src/kernel/'],
    ['symbols', '^src/symbols/'],
    ['flame', '^src/flame/'],
  ],
  [['bpf', '^src/bpf/']],
  [['lang', '^src/lang/']],
  [['probes', '^src/probes/']],
  [['codegen', '^src/codegen/']],
  [['compiler', '^src/(compiler|target)[.]ts$']],
  [['runtime', '^src/runtime/']],
  [
    ['api', '^src/api/'],
    ['inspect', '^src/inspect/'],
  ],
  [['tools', '^src/tools/']],
  [['apps', '^src/(cli|ui|fleet)/']],
  [['index', '^src/index[.]ts$']],
];

/** One rule per layer: it may not import any layer of its own level (but itself) or of a higher level. */
function layerRules() {
  const rules = [];
  LAYERS.forEach((level, i) => {
    for (const [name, path] of level) {
      const forbidden = [
        ...level.filter(([other]) => other !== name).map(([, p]) => p),
        ...LAYERS.slice(i + 1).flatMap((l) => l.map(([, p]) => p)),
      ];
      if (forbidden.length === 0) continue;
      rules.push({
        name: `layer-${name}`,
        comment: `${name} (${path}) imports only lower layers (see .dependency-cruiser.cjs LAYERS, docs/architecture.md)`,
        severity: 'error',
        from: { path },
        to: { path: forbidden },
      });
    }
  });
  return rules;
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules(),
    {
      name: 'host-facts-through-target',
      comment:
        'the analyser and the code generator read host facts (CPUs, PID namespace, kallsyms, cgroup ids, uaddr) ' +
        'only through the Target they are given (lang/target.ts), never from the live host',
      severity: 'error',
      from: { path: '^src/(lang|codegen)/' },
      to: { path: '^src/(kernel/(cpus|pidns)[.]ts$|symbols/|probes/uaddr[.]ts$|target[.]ts$)' },
    },
    {
      name: 'codegen-not-analyser',
      comment:
        'the code generator takes what it needs from the typed AST, its type table and the lang/ modules below the ' +
        'analyser (units.ts, typeops.ts, ptregs.ts, builtins/), never from the analyser (lang/passes/semantic*.ts)',
      severity: 'error',
      from: { path: '^src/codegen/' },
      to: { path: '^src/lang/passes/semantic' },
    },
    {
      name: 'no-circular',
      comment: 'modules import each other in one direction only',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: require('node:path').join(__dirname, 'tsconfig.json') },
    moduleSystems: ['es6', 'cjs'],
  },
};
