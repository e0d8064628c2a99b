/**
 * Embedded servers whose tools are registered now, with their full names and schemas (spec
 * sections 11 and 12), and whose behaviour arrives with their own issues: `tools/list`
 * answers in full; a call with valid arguments answers a clear "not implemented" error
 * (JSON-RPC -32603, `data.error = not_implemented`), never a made-up result.
 */
import { AppError } from '../errors/index.js';
import { GatewayError, RPC, type ToolServer } from '../gateway/types.js';
import { embeddedServer } from './embedded.js';

export function registeredOnlyServer(path: string, arrivesWith: string): ToolServer {
  return embeddedServer(path, (_ctx, tool) => {
    const e = new AppError('ERR_NOT_IMPLEMENTED');
    return Promise.reject(new GatewayError(RPC.INTERNAL, `Not implemented yet: ${tool.name} arrives with ${arrivesWith}`, { error: e.code, capability: tool.name }));
  });
}
