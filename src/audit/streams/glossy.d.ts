/** glossy 0.1 (syslog message producer and parser) ships no types: the part Coffer uses. */
declare module 'glossy' {
  interface ProduceOptions {
    readonly type: 'RFC5424' | 'RFC3164';
    readonly appName?: string;
    readonly pid?: number;
    readonly host?: string;
  }
  class Produce {
    constructor(options: ProduceOptions);
    /** The message, or false when facility or severity is unknown. */
    produce(message: {
      facility: string;
      severity: string;
      msgID?: string;
      date: Date;
      message: string;
    }): string | false;
  }
  const glossy: { Produce: typeof Produce };
  export default glossy;
}
