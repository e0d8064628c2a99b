// Worker threads do not inherit the tsx loader of the process that starts them: register it, then
// load the export thread's TypeScript source (src/observability/export-thread.ts).
import { register } from 'tsx/esm/api';

register();
await import('./export-thread.ts');
