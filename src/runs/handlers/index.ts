import { getRunStatus, getRunResults } from './polling.js';
import { downloadRunFile } from './downloadRunFile.js';

/** Spec endpoints 3 and 4 and the run-files host. */
export const runHandlers = { getRunStatus, getRunResults, downloadRunFile };
