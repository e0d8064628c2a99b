import { guardBearerAuth } from '../../http/support.js';
import { createBrowserLogin } from './createBrowserLogin.js';
import { deleteBrowserLogin } from './deleteBrowserLogin.js';
import { getBrowserLogin } from './getBrowserLogin.js';
import { listBrowserLogins } from './listBrowserLogins.js';

/** The saved browser login operations of openapi/management.yaml (src/browser/logins.ts). */
export const browserLoginHandlers = guardBearerAuth({
  listBrowserLogins,
  createBrowserLogin,
  getBrowserLogin,
  deleteBrowserLogin,
});
