/**
 * What browser scripts may send through the relay (src/browser/relay.ts, README.md "Network"):
 * every method of playwright-core's protocol, by interface, is decided here: allowed, allowed
 * with some parameters refused, dropped or rewritten, or refused with the reason. A method
 * missing from this list is refused as well ("not on the relay's allow-list");
 * test/unit/browser/protocol-allowlist.test.ts fails when the installed playwright-core has a
 * method this list does not decide, or a parameter named like a path, folder, program,
 * environment or proxy that an allowed method does not declare. The CDP commands a CDP session
 * may send are in cdp-allowlist.ts.
 *
 * Scripts run against a browser server started by launchServer in the service's own process:
 * its server side (playwright-core) acts on the service's machine for every call that names a
 * file, a folder, a program or a server, so none of those is allowed.
 */

/** How the relay treats one parameter of an allowed call; the key is a dotted path, arrays on the way looked through. */
export type ParamRule =
  /** The call is refused when the parameter is present. */
  | { how: 'refuse'; why: string }
  /** The parameter is removed before the call goes on (Playwright's own client sends it). */
  | { how: 'drop'; why: string }
  /** The parameter is set to the guarded proxy, whatever the script sent, also when it sent none. */
  | { how: 'proxy'; why: string }
  /** When present, the parameter must be a plain file name: no folder, no leading dot. */
  | { how: 'plainName'; why: string }
  /** Named like a host path, but names nothing on the service's machine (documented, passed as it is). */
  | { how: 'inert'; why: string };

export type MethodRule = { allow: true; params?: Readonly<Record<string, ParamRule>> } | { refuse: string };

const ALLOW: MethodRule = { allow: true };

/** The same decision for several methods. */
function each(methods: readonly string[], rule: MethodRule): Record<string, MethodRule> {
  return Object.fromEntries(methods.map((m) => [m, rule]));
}

const refuse = (why: string): MethodRule => ({ refuse: why });

const BY_CONTENTS = 'files are uploaded by their contents here ({name, mimeType, buffer}), not by paths';
const DROPPED_FILES: Record<string, ParamRule> = {
  localPaths: { how: 'refuse', why: BY_CONTENTS },
  streams: { how: 'refuse', why: BY_CONTENTS },
};
const INPUT_FILES: Record<string, ParamRule> = {
  ...DROPPED_FILES,
  localDirectory: { how: 'refuse', why: BY_CONTENTS },
  directoryStream: { how: 'refuse', why: BY_CONTENTS },
};
const COOKIE_PATH: ParamRule = { how: 'inert', why: "a cookie's URL path" };
const CLEAR_COOKIES: Record<string, ParamRule> = {
  path: COOKIE_PATH,
  pathRegexSource: COOKIE_PATH,
  pathRegexFlags: COOKIE_PATH,
};
const STORAGE_STATE: Record<string, ParamRule> = {
  'storageState.cookies.path': COOKIE_PATH,
  'storageState.origins.indexedDB': { how: 'inert', why: "an origin's IndexedDB contents, written in the browser" },
  'storageState.origins.opfs': {
    how: 'inert',
    why: "files of an origin's private file system, with their contents, written in the browser",
  },
};
const URL_PATTERNS: Record<string, ParamRule> = {
  'patterns.urlPattern': { how: 'inert', why: 'a URL pattern that requests are matched against' },
};
const CONTEXT_OPTIONS: Record<string, ParamRule> = {
  proxy: {
    how: 'proxy',
    why: "the context and its API requests go through the guarded proxy, whatever the script names (the browser's own traffic does already)",
  },
  recordVideo: {
    how: 'refuse',
    why: "video is encoded by a program (ffmpeg) started on the service's machine and written there",
  },
  ...STORAGE_STATE,
};
const PLAIN_TRACE_NAME: ParamRule = {
  how: 'plainName',
  why: "a trace name is a plain file name here (letters, digits, dots, dashes and underscores; no folders): playwright-core writes <traces folder>/<name>.trace on the service's machine",
};

const HOST_PROGRAMS = "it would start programs or open connections from the service's machine";
const NOT_A_BROWSER_TASK = 'Android devices and Electron apps are not part of browser tasks';
const LOCAL_SIDE =
  "it is a utility of a client's own side (zip and HAR files, connections) and acts on the machine it runs on; a browser server gives remote clients none";
const INSPECTOR = "it drives Playwright's inspector or recorder, which need a person at the service's machine";
const SCREENCAST =
  "screencasts are video recordings, encoded by a program (ffmpeg) started on the service's machine; scripts take screenshots";
const JS_HANDLE: Record<string, MethodRule> = each(
  ['dispose', 'evaluateExpression', 'evaluateExpressionHandle', 'getPropertyList', 'getProperty', 'jsonValue'],
  ALLOW,
);

/** Every method of the protocol, by interface (the type in the server's `__create__` message). */
export const PLAYWRIGHT_ALLOWLIST: Readonly<Record<string, Readonly<Record<string, MethodRule>>>> = {
  // The handshake: chromium.connect sends Root.initialize and takes the browser from its answer.
  Root: { initialize: ALLOW },
  Playwright: {
    newRequest: refuse(
      'scripts make API requests with page.request, which belongs to their context (a request context of its own would live outside any context)',
    ),
  },
  BrowserType: each(['launch', 'launchPersistentContext', 'connectOverCDP', 'connectToWorker'], refuse(HOST_PROGRAMS)),
  Android: { devices: refuse(NOT_A_BROWSER_TASK) },
  AndroidDevice: each(
    [
      'wait',
      'fill',
      'tap',
      'drag',
      'fling',
      'longTap',
      'pinchClose',
      'pinchOpen',
      'scroll',
      'swipe',
      'info',
      'screenshot',
      'inputType',
      'inputPress',
      'inputTap',
      'inputSwipe',
      'inputDrag',
      'launchBrowser',
      'open',
      'shell',
      'installApk',
      'push',
      'connectToWebView',
      'close',
    ],
    refuse(NOT_A_BROWSER_TASK),
  ),
  AndroidSocket: each(['write', 'close'], refuse(NOT_A_BROWSER_TASK)),
  Electron: { launch: refuse(NOT_A_BROWSER_TASK) },
  ElectronApplication: each(
    ['browserWindow', 'evaluateExpression', 'evaluateExpressionHandle', 'updateSubscription'],
    refuse(NOT_A_BROWSER_TASK),
  ),
  LocalUtils: each(
    [
      'zip',
      'harOpen',
      'harLookup',
      'harClose',
      'harUnzip',
      'connect',
      'tracingStarted',
      'addStackToTracingNoReply',
      'traceDiscarded',
      'globToRegex',
      'asLocatorDescription',
    ],
    refuse(LOCAL_SIDE),
  ),
  JsonPipe: each(['send', 'close'], refuse(LOCAL_SIDE)),
  DebugController: each(
    ['initialize', 'setReportStateChanged', 'setRecorderMode', 'highlight', 'hideHighlight', 'resume', 'kill'],
    refuse(INSPECTOR),
  ),
  SocksSupport: each(
    ['socksConnected', 'socksFailed', 'socksData', 'socksError', 'socksEnd'],
    refuse('the browser reaches the network through the guarded proxy, not through a client'),
  ),
  Browser: {
    newContext: { allow: true, params: CONTEXT_OPTIONS },
    newContextForReuse: refuse(
      'a context for reuse outlives the connection and is shared between connections; scripts make fresh contexts with browser.newContext()',
    ),
    disconnectFromReusedContext: refuse('scripts use no context for reuse'),
    newBrowserCDPSession: ALLOW,
    close: refuse("the browser is shared by the organisation's tasks; a script ends by returning"),
    killForTests: refuse("the browser is shared by the organisation's tasks; a script ends by returning"),
    defaultUserAgentForTest: refuse("a call of Playwright's own tests"),
    startServer: refuse("it would start a server on the service's machine"),
    stopServer: refuse("it would stop a server on the service's machine"),
    startTracing: refuse(
      "Chromium's performance trace is written to a file on the service's machine; scripts have context.tracing",
    ),
    stopTracing: refuse(
      "Chromium's performance trace is written to a file on the service's machine; scripts have context.tracing",
    ),
  },
  BrowserContext: {
    ...each(
      [
        'addInitScript',
        'clearPermissions',
        'close',
        'cookies',
        'exposeBinding',
        'grantPermissions',
        'newPage',
        'registerSelectorEngine',
        'setTestIdAttributeName',
        'setExtraHTTPHeaders',
        'setGeolocation',
        'setHTTPCredentials',
        'setOffline',
        'storageState',
        'newCDPSession',
        'updateSubscription',
        'clockFastForward',
        'clockInstall',
        'clockPauseAt',
        'clockResume',
        'clockRunFor',
        'clockSetFixedTime',
        'clockSetSystemTime',
        // Virtual WebAuthn credentials of the context, kept in the browser.
        'credentialsInstall',
        'credentialsCreate',
        'credentialsGet',
        'credentialsDelete',
      ],
      ALLOW,
    ),
    addCookies: { allow: true, params: { 'cookies.path': COOKIE_PATH } },
    clearCookies: { allow: true, params: CLEAR_COOKIES },
    setNetworkInterceptionPatterns: { allow: true, params: URL_PATTERNS },
    setWebSocketInterceptionPatterns: { allow: true, params: URL_PATTERNS },
    setStorageState: { allow: true, params: STORAGE_STATE },
    createTempFiles: refuse("it writes files on the service's machine (scripts upload file contents)"),
    pause: refuse(INSPECTOR),
    showRecorder: refuse(INSPECTOR),
    startRecording: refuse(INSPECTOR),
    stopRecording: refuse(INSPECTOR),
    exposeConsoleApi: refuse(INSPECTOR),
  },
  Debugger: each(['requestPause', 'resume', 'next', 'runTo', 'enable'], refuse(INSPECTOR)),
  Page: {
    ...each(
      [
        'addInitScript',
        'close',
        'runBeforeUnload',
        'clearConsoleMessages',
        'consoleMessages',
        'emulateMedia',
        'exposeBinding',
        'goBack',
        'goForward',
        'requestGC',
        'registerLocatorHandler',
        'resolveLocatorHandlerNoReply',
        'unregisterLocatorHandler',
        'reload',
        'screenshot',
        'setExtraHTTPHeaders',
        'setViewportSize',
        'keyboardDown',
        'keyboardUp',
        'keyboardInsertText',
        'keyboardType',
        'keyboardPress',
        'mouseMove',
        'mouseDown',
        'mouseUp',
        'mouseClick',
        'mouseWheel',
        'touchscreenTap',
        'clearPageErrors',
        'pageErrors',
        'pdf',
        'requests',
        'startJSCoverage',
        'stopJSCoverage',
        'startCSSCoverage',
        'stopCSSCoverage',
        'bringToFront',
        'hideHighlight',
        'updateSubscription',
        'webStorageItems',
        'webStorageGetItem',
        'webStorageSetItem',
        'webStorageRemoveItem',
        'webStorageClear',
      ],
      ALLOW,
    ),
    setNetworkInterceptionPatterns: { allow: true, params: URL_PATTERNS },
    setWebSocketInterceptionPatterns: { allow: true, params: URL_PATTERNS },
    expectScreenshot: refuse(
      "screenshot comparison belongs to the test runner's expect, which scripts do not have (it compares images in the service's process)",
    ),
    pickLocator: refuse('it waits for a person to pick an element in a visible browser; tasks run headless'),
    cancelPickLocator: refuse('it waits for a person to pick an element in a visible browser; tasks run headless'),
    setDockTile: refuse("it changes the browser application's dock icon; tasks run headless"),
    ...each(
      [
        'screencastShowOverlay',
        'screencastRemoveOverlay',
        'screencastChapter',
        'screencastSetOverlayVisible',
        'screencastShowActions',
        'screencastHideActions',
        'screencastStart',
        'screencastFrameAck',
        'screencastStop',
      ],
      refuse(SCREENCAST),
    ),
  },
  Frame: {
    ...each(
      [
        'evalOnSelector',
        'evalOnSelectorAll',
        'addScriptTag',
        'addStyleTag',
        'ariaSnapshot',
        'ariaSnapshotJSON',
        'blur',
        'check',
        'click',
        'content',
        'dragAndDrop',
        'dblclick',
        'dispatchEvent',
        'evaluateExpression',
        'evaluateExpressionHandle',
        'fill',
        'focus',
        'frameElement',
        'resolveSelector',
        'highlight',
        'hideHighlight',
        'getAttribute',
        'goto',
        'hover',
        'innerHTML',
        'innerText',
        'inputValue',
        'isChecked',
        'isDisabled',
        'isEnabled',
        'isHidden',
        'isVisible',
        'isEditable',
        'press',
        'querySelector',
        'querySelectorAll',
        'queryCount',
        'selectOption',
        'setContent',
        'tap',
        'textContent',
        'title',
        'type',
        'uncheck',
        'waitForTimeout',
        'waitForFunction',
        'waitForSelector',
        'expect',
        // Tools a page declares for agents (WebMCP), called in the page.
        'webmcpTools',
        'webmcpCallTool',
      ],
      ALLOW,
    ),
    setInputFiles: { allow: true, params: INPUT_FILES },
    drop: { allow: true, params: DROPPED_FILES },
  },
  JSHandle: JS_HANDLE,
  ElementHandle: {
    ...JS_HANDLE,
    ...each(
      [
        'evalOnSelector',
        'evalOnSelectorAll',
        'boundingBox',
        'check',
        'click',
        'contentFrame',
        'dblclick',
        'dispatchEvent',
        'fill',
        'focus',
        'getAttribute',
        'hover',
        'innerHTML',
        'innerText',
        'inputValue',
        'isChecked',
        'isDisabled',
        'isEditable',
        'isEnabled',
        'isHidden',
        'isVisible',
        'ownerFrame',
        'press',
        'querySelector',
        'querySelectorAll',
        'screenshot',
        'scrollIntoViewIfNeeded',
        'selectOption',
        'selectText',
        'tap',
        'textContent',
        'type',
        'uncheck',
        'waitForElementState',
        'waitForSelector',
      ],
      ALLOW,
    ),
    setInputFiles: { allow: true, params: INPUT_FILES },
  },
  Request: each(['response', 'rawRequestHeaders'], ALLOW),
  Response: each(['body', 'securityDetails', 'serverAddr', 'rawResponseHeaders', 'httpVersion', 'sizes'], ALLOW),
  Route: each(['redirectNavigationRequest', 'abort', 'continue', 'fulfill'], ALLOW),
  WebSocketRoute: each(['connect', 'ensureOpened', 'sendToPage', 'sendToServer', 'closePage', 'closeServer'], ALLOW),
  APIRequestContext: {
    ...each(['fetchResponseBody', 'fetchLog', 'cookies', 'storageState', 'disposeAPIResponse', 'dispose'], ALLOW),
    fetch: {
      allow: true,
      params: { 'multipartData.file': { how: 'inert', why: 'a file sent with the request, by its contents' } },
    },
    addCookies: { allow: true, params: { 'cookies.path': COOKIE_PATH } },
    clearCookies: { allow: true, params: CLEAR_COOKIES },
  },
  Artifact: {
    // Downloads are read as streams (download.createReadStream(), Artifact.stream).
    ...each(['saveAsStream', 'failure', 'stream', 'cancel', 'delete'], ALLOW),
    saveAs: refuse(
      "it writes a file on the service's machine (scripts read downloads as streams: download.createReadStream())",
    ),
    pathAfterFinished: refuse("it names a file on the service's machine (scripts read downloads as streams)"),
  },
  Stream: each(['read', 'close'], ALLOW),
  WritableStream: each(
    ['write', 'close'],
    refuse("it writes a file on the service's machine (scripts upload file contents)"),
  ),
  Disposable: { dispose: ALLOW },
  CDPSession: {
    // Each command is checked against cdp-allowlist.ts.
    send: ALLOW,
    detach: ALLOW,
  },
  BindingCall: each(['reject', 'resolve'], ALLOW),
  Dialog: each(['accept', 'dismiss'], ALLOW),
  Tracing: {
    ...each(['tracingGroupEnd', 'tracingStopChunk', 'tracingStop', 'harExport'], ALLOW),
    tracingStart: { allow: true, params: { name: PLAIN_TRACE_NAME } },
    tracingStartChunk: { allow: true, params: { name: PLAIN_TRACE_NAME } },
    tracingGroup: {
      allow: true,
      params: { 'location.file': { how: 'inert', why: "the script's source file, a label in the trace" } },
    },
    harStart: {
      allow: true,
      params: {
        'options.harPath': {
          how: 'drop',
          why: "Playwright's client names the HAR file it will write itself; the server keeps its own copy in its artifacts folder",
        },
        'options.resourcesDir': {
          how: 'drop',
          why: "Playwright's client names the folder it will write itself; the server keeps its own copy in its artifacts folder",
        },
      },
    },
  },
  Worker: {
    ...each(['evaluateExpression', 'evaluateExpressionHandle', 'updateSubscription'], ALLOW),
    disconnect: refuse('it ends a connection to a worker made by connectToWorker, which scripts cannot make'),
  },
};

/**
 * Calls every object takes, outside the interfaces: `__waitInfo__` (the log of a waitForEvent)
 * and `__abort__` (an aborted call). Neither acts on anything but the call it names.
 */
export const ANY_OBJECT_METHODS: ReadonlySet<string> = new Set(['__waitInfo__', '__abort__']);
