/**
 * Text from the server or from another party (a token's name, a login role's description, an identity
 * provider's error), made safe to print on a terminal. Control characters (C0, DEL, C1) would be acted on
 * by the terminal — clear the screen, set its title, write the clipboard, move the cursor back over a line
 * so that a listing hides it — and bidirectional overrides reorder what is shown: each is printed as an
 * escape instead (`\n`, `\t`, `\u001b`), so what people read is what is there. A value `coffer kv get`
 * prints is not text for people and is never changed.
 */
const UNPRINTABLE = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) =>
    c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
