/**
 * Where the audit writer (writer.ts) puts its lines. The writer owns the chain (sequence numbers, hashes,
 * checkpoints), batching, waiting and refusal; a sink only stores whole lines in the order it is given
 * them. The chain's home is one sink (the files, file-sink.ts); copies (stdout, stdout-sink.ts) receive
 * each batch once it is where its entries asked to be, and a copy's failure never refuses a request.
 */
export interface AuditSink {
  /**
   * Stores a batch of lines (each one JSON object, without a newline), after every earlier batch. Once it
   * resolves, a killed process cannot lose them. When it rejects, nothing of the batch is kept: the writer
   * gives the same lines again later.
   */
  write(lines: readonly string[]): Promise<void>;
  /** Makes every line stored before the call durable (it survives a power loss). */
  sync(): Promise<void>;
  /** Where the next line goes (a file number), recorded with each checkpoint. */
  readonly position: number;
  /** Syncs what is stored and lets go of the sink's resources. */
  close(): Promise<void>;
}
