/**
 * Containment of processes that run tenant code: the levels this machine allows, their command
 * lines and their watchdog (README.md).
 */
export {
  probeIsolation,
  findProgram,
  IsolationUnavailableError,
  type Isolation,
  type IsolationMode,
  type IsolationReport,
  type ProbeOptions,
} from './probe.js';
export { launchCommand, bwrapArgs, type Bind, type ContainSpec, type LaunchPlan } from './launch.js';
export { PROGRAM_ROOT, programPath, programBinds, parentDirs } from './program-view.js';
export {
  processTree,
  sampleTree,
  sampleKnown,
  killTree,
  uidOf,
  pssBytes,
  cpuMs,
  residentBytes,
  type TreeSample,
} from './tree.js';
export { RunnerUsers, runnerUsers, RUNNER_UID_BASE, RUNNER_UID_COUNT } from './users.js';
export { RUNNER_COMMON_PATH, RUNNER_EXIT, RUNNER_MESSAGE, RUNNER_PROTOCOL, runnerOptionsArg } from './runners.js';
export {
  SupervisedRunner,
  superviseRunner,
  type StartFailure,
  type SupervisorOptions,
  type TreeBreach,
  type WatchOptions,
} from './supervisor.js';
export { MemoryBudget, type BudgetKind, type BudgetMember, type BudgetStats } from './budget.js';
