/**
 * The workflow `agent` step's way into the agents context (src/engine/steps/agent.ts): one
 * turn in a new chat as the run's organisation. Refusals (unknown agent, no model) and turn
 * failures are outcomes, never exceptions, so the step records them clearly.
 */
import type { AgentInvoker } from '../engine/index.js';
import { isAppError } from '../errors/index.js';
import type { AgentService } from './service.js';

/** The step only starts turns. */
export interface AgentInvokerDeps {
  agents: Pick<AgentService, 'start'>;
}

export function agentInvoker(services: AgentInvokerDeps): AgentInvoker {
  return async ({ orgId, agentId, message, signal }) => {
    let inv;
    try {
      inv = await services.agents.start({ orgId, agentId, message, signal });
    } catch (err) {
      if (isAppError(err) && err.status < 500) return { kind: 'refused', message: err.message };
      if (isAppError(err) && err.key === 'ERR_AGENT_MODEL_NOT_CONFIGURED')
        return { kind: 'refused', message: err.message };
      throw err;
    }
    const outcome = await inv.done;
    if (outcome.ok)
      return {
        kind: 'ok',
        chatId: inv.chatId,
        turnId: inv.turnId,
        reply: outcome.reply,
        output: outcome.output,
        messages: outcome.messages,
      };
    return {
      kind: 'failed',
      chatId: inv.chatId,
      turnId: inv.turnId,
      error: outcome.error.error,
      message: outcome.error.message,
      messages: outcome.messages,
    };
  };
}
