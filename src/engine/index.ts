/**
 * Engine context public surface: workflow definitions, workflow records and versions
 * (management API), the immutable version cache, and step execution (sandbox, templates,
 * step executors) used by the run workers.
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
  currentWorkflowVersion,
  getWorkflow,
  listWorkflows,
  updateWorkflow,
  deleteWorkflow,
  type Workflow,
} from './workflows.js';
export { listWorkflowVersions, getWorkflowVersion, type WorkflowVersion } from './workflows-versions.js';
export { loadVersion, type PinnedVersion } from './version-cache.js';
export {
  executeStep,
  type PriorStep,
  type StepRunContext,
  type ProducedFile,
  type ExecutedStep,
  type StepDeps,
  type ToolCaller,
  type AgentInvoker,
  type ToolCall,
  type StepStatus,
  type ResultType,
} from './execute-step.js';
export {
  SandboxPool,
  type SandboxPoolOptions,
  type SandboxRun,
  DEFAULT_LIMITS as SANDBOX_LIMITS,
  type SandboxLimits,
} from './sandbox/index.js';
export {
  renderTemplates,
  findTemplates,
  TemplateError,
  DEFAULT_TEMPLATE_LIMITS,
  type TemplateData,
  type TemplateLimits,
} from './template.js';
