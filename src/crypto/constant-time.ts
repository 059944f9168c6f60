import { timingSafeEqual } from 'node:crypto';

/** Whether two texts are equal, compared in constant time for texts of one length (a state, a CSRF token). */
export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
