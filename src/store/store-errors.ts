/**
 * The storage's own failure, as the layers above the store see it: the storage cannot be reached now
 * (a database that is down, restarting or too slow), answered 503 storage_unavailable. Defined with the
 * backends (storage/backend.ts), which raise it; nothing above the store imports the storage layer.
 */
export { StorageUnavailableError } from '../storage/backend.js';
