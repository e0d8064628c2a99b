import { guardBearerAuth } from '../../http/support.js';
import { createTrigger } from './createTrigger.js';
import { deleteTrigger } from './deleteTrigger.js';
import { getTrigger } from './getTrigger.js';
import { getRun } from './getRun.js';
import { listTriggers } from './listTriggers.js';
import { updateTrigger } from './updateTrigger.js';
import {
  callApiTrigger,
  callApiTriggerWithQuery,
  callWebhookTrigger,
  callWebhookTriggerWithQuery,
} from './trigger-calls.js';
import { getRunStatus, getRunResults } from './polling.js';

/** Handlers of the trigger management operations in openapi/management.yaml (Handler<operationId> each). */
export const triggerHandlers = guardBearerAuth({
  listTriggers,
  createTrigger,
  getTrigger,
  updateTrigger,
  deleteTrigger,
  getRun,
});

/** Spec endpoints 1 and 2 and their GET forms (authorised by the API key, not a token). */
export const triggerCallHandlers = {
  callApiTrigger,
  callApiTriggerWithQuery,
  callWebhookTrigger,
  callWebhookTriggerWithQuery,
};

/** Spec endpoints 3 and 4: polling a run's status and results (authorised by the API key). */
export const runPollingHandlers = { getRunStatus, getRunResults };
