/** Code-step sandbox: warm child processes running steps in vm contexts, fresh or kept per step code (README.md). */
export { SandboxPool, type SandboxPoolOptions, type SandboxRequest, type SandboxRun, type SandboxFile } from './pool.js';
export { DEFAULT_LIMITS, sanitizeFileName, type SandboxLimits } from './limits.js';
export { permissionFlag, sandboxExecArgv, sandboxForkOptions, RUNNER_PATH } from './flags.js';
export { PROTOCOL_VERSION } from './protocol.js';
