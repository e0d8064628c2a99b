/**
 * The demo agent created on first start: wired to the gateway's fixed three tools (spec section
 * 9: capabilities_discover, capability_details, gateway_invoke), so it can find and call every
 * tool of the organisation, with a text API channel (spec section 5). It names no model: it
 * runs DEFAULT_MODEL, and without one its channel answers a clear error saying how to set it.
 */
import type { AgentCreate } from '../agents/index.js';

export const demoAgent: AgentCreate = {
  name: 'Demo assistant',
  description: 'Answers questions and does small tasks with the tools of this Switchyard organisation.',
  instructions: [
    'You are the demo assistant of a Switchyard installation. Answer briefly and plainly.',
    'When a request needs a tool: find it with capabilities_discover (describe the task in plain words),',
    'read its parameters with capability_details when you are unsure, then call it with gateway_invoke',
    '(server = the serverName from discovery, tool = its name, arguments = an object).',
    'Never invent tool results; if no tool fits, say so.',
  ].join(' '),
  servers: [{ server: 'gateway' }],
  introMessage: 'Hello! I can find and use the tools connected to this Switchyard. What do you need?',
};
