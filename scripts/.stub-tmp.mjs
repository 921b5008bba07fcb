import { build } from 'esbuild';
const stubs = (process.env.STUBS || 'compiler').split(',');
const plugin = { name: 'stub', setup(b) {
  b.onLoad({ filter: /src\/.*\.ts$/ }, (a) => {
    for (const s of stubs) if (a.path.endsWith(`/src/${s}.ts`)) return { contents: 'export const compile = () => { throw new Error("stub"); }; export const programOptions = () => { throw new Error("stub"); }; export const emit=compile, peephole=compile, allocateRegisters=compile, ALLOCATABLE=[];', loader: 'ts' };
    return undefined;
  });
} };
const r = await build({ bundle: true, format: 'cjs', platform: 'node', target: 'node20', external: ['koffi'],
  define: { 'import.meta.url': '__bpfscopeFileUrl' }, banner: { js: "const __bpfscopeFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  entryPoints: ['src/cli/agent-main.ts'], outfile: process.env.OUT, minifyWhitespace: true, minifySyntax: true, metafile: true, plugins: [plugin], logLevel: 'error' });
const out = Object.values(r.metafile.outputs)[0];
const dirs = {};
for (const [f, v] of Object.entries(out.inputs)) { const d = f.split('/').slice(0, 2).join('/'); dirs[d] = (dirs[d] ?? 0) + v.bytesInOutput; }
console.log(out.bytes, JSON.stringify(dirs));
