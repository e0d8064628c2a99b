export { BrowserService, TaskError, type ScriptArgs, type PollArgs, type FileEntry } from './service.js';
export type { OperatorArgs } from './operator/task.js';
export { BrowserPool, BrowserUnavailableError, CHROMIUM_ARGS } from './pool.js';
export { allLogins, loginState, type LoginView } from './logins.js';
