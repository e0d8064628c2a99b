/**
 * A problem of the caller's own task (unknown session, wrong collection, a file to upload that
 * cannot be fetched): the tool's result with isError.
 */
export class TaskError extends Error {}
