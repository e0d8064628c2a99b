/**
 * Worker-only entry (scale-out). The run queue and its workers arrive with the workflow
 * engine issue; until then this entry refuses to start with a clear message instead of
 * pretending to work.
 */
import { loadConfig } from './config/index.js';
import { createLogger } from './config/logger.js';

const config = loadConfig();
const log = createLogger(config.logLevel);
log.error({ capability: 'run queue workers' }, 'not implemented: the run queue and workers arrive with the workflow engine (issue 3)');
process.exitCode = 2;
