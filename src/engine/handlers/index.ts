import { createWorkflow } from './createWorkflow.js';
import { deleteWorkflow } from './deleteWorkflow.js';
import { getWorkflow } from './getWorkflow.js';
import { getWorkflowVersion } from './getWorkflowVersion.js';
import { listWorkflows } from './listWorkflows.js';
import { listWorkflowVersions } from './listWorkflowVersions.js';
import { updateWorkflow } from './updateWorkflow.js';

/** Handlers of the workflow operations in openapi/management.yaml, keyed by operationId. */
export const workflowHandlers = {
  listWorkflows,
  createWorkflow,
  getWorkflow,
  updateWorkflow,
  deleteWorkflow,
  listWorkflowVersions,
  getWorkflowVersion,
};
