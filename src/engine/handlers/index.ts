import { guardBearerAuth } from '../../http/support.js';
import { createWorkflow } from './createWorkflow.js';
import { deleteWorkflow } from './deleteWorkflow.js';
import { getWorkflow } from './getWorkflow.js';
import { getWorkflowVersion } from './getWorkflowVersion.js';
import { listWorkflows } from './listWorkflows.js';
import { listWorkflowVersions } from './listWorkflowVersions.js';
import { updateWorkflow } from './updateWorkflow.js';

/**
 * Handlers of the workflow operations in openapi/management.yaml, keyed by operationId; each
 * is a Handler<operationId>, which src/app.ts checks with `satisfies HandlerMap`.
 */
export const workflowHandlers = guardBearerAuth({
  listWorkflows,
  createWorkflow,
  getWorkflow,
  updateWorkflow,
  deleteWorkflow,
  listWorkflowVersions,
  getWorkflowVersion,
});
