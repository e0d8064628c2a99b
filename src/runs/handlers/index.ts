import { downloadRunFile } from './downloadRunFile.js';
import { listRuns } from './listRuns.js';
import { guardBearerAuth } from '../../http/support.js';

/** The run-files host (the polling endpoints 3 and 4 are the triggers context's). */
export const runHandlers = { downloadRunFile };

/** The runs list of openapi/management.yaml. */
export const runListHandlers = guardBearerAuth({ listRuns });
