/** Code-step sandbox: runner processes per organisation running steps in isolated-vm isolates (README.md). */
export {
  SandboxPool,
  RUNNER_EXPECTED_BYTES,
  FALLBACK_BUDGET_BYTES,
  type SandboxPoolOptions,
  type SandboxRequest,
  type SandboxRun,
  type SandboxFile,
} from './pool.js';
export { DEFAULT_LIMITS, sanitizeFileName, type SandboxLimits } from './limits.js';
export { runnerCommand, runnerView, addonPath, RUNNER_PATH, type RunnerArgs, type Breach } from './flags.js';
export { PROTOCOL_VERSION } from './protocol.js';
