/**
 * Engine context public surface. Foundation scope: workflow definitions and workflow records
 * (management API). Step executors arrive with a later issue.
 */
export {
  validateDefinition,
  nextStepMap,
  canonicalJson,
  STEP_TYPES,
  type WorkflowDefinition,
  type WorkflowStep,
  type StepType,
  type DefinitionError,
} from './definition.js';
export {
  createWorkflow,
  findWorkflow,
  getWorkflow,
  listWorkflows,
  updateWorkflow,
  deleteWorkflow,
  type Workflow,
} from './workflows.js';
export { listWorkflowVersions, getWorkflowVersion, type WorkflowVersion } from './workflows-versions.js';
export { workflowHandlers } from './handlers/index.js';
