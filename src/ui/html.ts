/** htm bound to Preact: markup as tagged templates, every interpolated value escaped by construction. */
import htm from 'htm';
import { h } from 'preact';

export const html = htm.bind(h);
