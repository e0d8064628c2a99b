// Worker threads do not inherit the tsx loader of the process that starts them: register it, then
// load the delivery thread's TypeScript source (src/events/delivery-thread.ts).
import { register } from 'tsx/esm/api';

register();
await import('./delivery-thread.ts');
