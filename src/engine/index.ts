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
export {
  executeStep,
  type PriorStep,
  type StepRunContext,
  type ProducedFile,
  type ExecutedStep,
  type StepDeps,
  type StepStatus,
  type ResultType,
} from './execute-step.js';
export { SandboxPool, type SandboxPoolOptions, type SandboxRun, DEFAULT_LIMITS as SANDBOX_LIMITS, type SandboxLimits } from './sandbox/index.js';
export { renderTemplates, findTemplates, TemplateError, DEFAULT_TEMPLATE_LIMITS, type TemplateData, type TemplateLimits } from './template.js';
export { NOT_IMPLEMENTED } from './steps/not-implemented.js';
