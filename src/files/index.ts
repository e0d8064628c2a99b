/**
 * The files context's public surface: stored files (the `files` table and their blobs), signed
 * download URLs, file names, and the multipart reader that streams uploaded parts to the blob
 * store. Triggers (attachments), runs (step files, downloads), events (filestorage items),
 * agents and the browser all use these; the files context uses no other context.
 */
export {
  recordFile,
  recordFiles,
  fileRows,
  fileRecords,
  getFile,
  findFile,
  listRunFiles,
  attachFilesToRun,
  deleteRunFiles,
  deleteUnattachedAttachments,
  deleteFiles,
  stepFilePrefix,
  fileSummaries,
  insertFileRows,
  insertFileRowsLater,
  isResultFileId,
  RESULT_FILE_ID_PREFIX,
  FILE_KINDS,
  type FileKind,
  type FileRecord,
  type FileCreate,
  type FileRow,
  type FileSummary,
} from './files.js';
export {
  ATTACHMENT_URL_TTL_SECONDS,
  STEP_FILE_URL_TTL_SECONDS,
  BROWSER_FILE_URL_TTL_SECONDS,
  FILESTORAGE_URL_TTL_SECONDS,
  signFileUrl,
  verifyFileSignature,
} from './signed-urls.js';
export { sanitizeFilename, extensionOf, MAX_FILENAME_BYTES, FALLBACK_FILENAME } from './filenames.js';
export {
  readMultipartTrigger,
  attachToRun,
  discardAttachments,
  ATTACHMENT_LIMITS,
  type Attachment,
  type AttachmentLimits,
  type AttachmentDeps,
  type MultipartTrigger,
} from './attachments.js';
