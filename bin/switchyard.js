#!/usr/bin/env node
// `npx switchyard …`: runs the TypeScript CLI through tsx (a runtime dependency).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
