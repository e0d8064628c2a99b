import { guardBearerAuth } from '../../http/support.js';
import { createBrowserLogin } from './createBrowserLogin.js';
import { deleteBrowserLogin } from './deleteBrowserLogin.js';
import { getBrowserLogin } from './getBrowserLogin.js';
import { listBrowserLogins } from './listBrowserLogins.js';
import { listBrowserTasks } from './listBrowserTasks.js';
import { getBrowserTask } from './getBrowserTask.js';

/** The saved browser login and browser task operations of openapi/management.yaml (logins.ts, task-views.ts). */
export const browserLoginHandlers = guardBearerAuth({
  listBrowserLogins,
  createBrowserLogin,
  getBrowserLogin,
  deleteBrowserLogin,
  listBrowserTasks,
  getBrowserTask,
});
