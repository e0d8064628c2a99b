import { getRunStatus, getRunResults } from './polling.js';
import { downloadRunFile } from './downloadRunFile.js';
import { listRuns } from './listRuns.js';
import { guardBearerAuth } from '../../http/support.js';

/** Spec endpoints 3 and 4 and the run-files host. */
export const runHandlers = { getRunStatus, getRunResults, downloadRunFile };

/** The runs list of openapi/management.yaml. */
export const runListHandlers = guardBearerAuth({ listRuns });
