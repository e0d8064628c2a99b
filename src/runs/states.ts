/** Run and step states (spec "States and transitions"; SKIPPED is our step-only addition). */
export type RunStatus = 'PENDING' | 'RUNNING' | 'COMPLETE' | 'FAILED' | 'TIMEOUT';
export type StepStatus = RunStatus | 'SKIPPED';

export const TERMINAL: readonly RunStatus[] = ['COMPLETE', 'FAILED', 'TIMEOUT'];

export const RUN_STATUSES: readonly RunStatus[] = ['PENDING', 'RUNNING', ...TERMINAL];

export function isTerminal(status: string): boolean {
  return (TERMINAL as readonly string[]).includes(status);
}
