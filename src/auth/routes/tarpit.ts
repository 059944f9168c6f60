/**
 * Holds a response back for a while before it is sent. Used for 429s: a flooding client waits instead
 * of getting cheap answers as fast as it can ask. At most `capacity` responses are held at once; past
 * that they go out at once (each held response costs a timer and an open socket, nothing else).
 */
export class Tarpit {
  private held = 0;

  constructor(
    private readonly delayMs = 1000,
    private readonly capacity = 10_000,
  ) {}

  async hold(): Promise<void> {
    if (this.held >= this.capacity) return;
    this.held++;
    try {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    } finally {
      this.held--;
    }
  }
}
