// Errors are typed classes with the details a program needs (docs/api.md, "Errors").
// Run as root: node dist/examples/api/errors.js
import { CompileError, KernelError, PermissionError, trace } from '../../src/index.js';

try {
  await trace('BEGIN { @x = ; }');
} catch (e) {
  if (e instanceof CompileError) {
    const d = e.diagnostics[0]!;
    console.log(`CompileError at ${d.pos?.line}:${d.pos?.col}: ${d.message}`);
  } else if (e instanceof PermissionError) {
    console.log(`not allowed (errno ${e.errno}): ${e.message}`);
  } else if (e instanceof KernelError) {
    console.log(`${e.syscall} failed with errno ${e.errno}${e.verifierLog ? `, verifier log:\n${e.verifierLog}` : ''}`);
  } else {
    throw e;
  }
}
