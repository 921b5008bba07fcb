import { BpfscopeError } from '../../errors.js';

/** Debug information that is missing, unsupported or malformed; `message` is one sentence naming the file or part. */
export class DwarfError extends BpfscopeError {
  constructor(message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, opts);
    this.name = 'DwarfError';
  }
}
