/**
 * Names as the API takes them, so the console can say what is wrong before it asks (the server's rules are
 * src/model/names.ts, which the console, bundled for the browser, does not import; the API decides): a name
 * is 1 to 128 of A–Z, a–z, 0–9, ".", "_" and "-", other than "." and ".."; a namespace is 1 to 16 names
 * joined by "/"; a key is one name, other than "versions".
 */

/** What a name may hold: also what a search by prefix may hold. */
export const NAME_CHARACTERS = /^[A-Za-z0-9._-]{1,128}$/;

export const NAME_RULE = 'Names hold only A–Z, a–z, 0–9, “.”, “_” and “-”.';

const isName = (text: string): boolean =>
  NAME_CHARACTERS.test(text) && text !== '.' && text !== '..';

export function isNamespace(text: string): boolean {
  const names = text.split('/');
  return names.length <= 16 && names.every(isName);
}

export const isKeyName = (text: string): boolean => isName(text) && text !== 'versions';
