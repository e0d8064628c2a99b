/**
 * Triggers context public surface: trigger records (management API), their public URLs, and
 * the handlers of trigger calls (attachments, idempotency, sync wait).
 */
export {
  createTrigger,
  findTrigger,
  getTrigger,
  listTriggers,
  updateTrigger,
  deleteTrigger,
  hasEnabledTriggers,
  TRIGGER_KINDS,
  type TriggerKind,
  type TriggerRecord,
  type TriggerCreate,
  type TriggerPatch,
  type TriggerFilter,
  type DesignatedOutput,
} from './triggers.js';
export { triggerUrl, triggerView, type TriggerView } from './urls.js';
export { CallTargets, type CallTarget } from './target.js';
