/**
 * `agent` steps are valid in a definition, but their machinery arrives with the agents issue.
 * Until then they fail clearly and never pretend to have run (exit code 2: the step cannot be
 * executed as written).
 */
import { EXIT, failed, type ExecutedStep } from './types.js';

export const NOT_IMPLEMENTED = {
  agent: 'Not implemented yet: agent steps arrive with the agents issue',
} as const;

export function notImplemented(type: keyof typeof NOT_IMPLEMENTED): ExecutedStep {
  return failed('FAILED', EXIT.invalid, NOT_IMPLEMENTED[type], 0);
}
