/**
 * A copy of the audit log on standard output (`audit.stdout`), for a log shipper: each batch is written
 * once it is where its entries asked to be in the files. Standard output promises no durability.
 */
import type { AuditSink } from './sink.js';

export class StdoutSink implements AuditSink {
  readonly position = 0;

  constructor(private readonly out: NodeJS.WritableStream = process.stdout) {}

  write(lines: readonly string[]): Promise<void> {
    this.out.write(lines.map((line) => `${line}\n`).join(''));
    return Promise.resolve();
  }

  sync(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
