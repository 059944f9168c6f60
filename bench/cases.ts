/** The Lua request shapes for wrk, one function per kind of request. */
import { lua } from './wrk.js';

const auth = (token: string): string => `{["Authorization"] = ${lua(`Bearer ${token}`)}}`;
const jsonAuth = (token: string): string =>
  `{["Authorization"] = ${lua(`Bearer ${token}`)}, ["Content-Type"] = "application/json"}`;

/** The same GET every time. */
export function get(path: string, token: string): string {
  return `local h = ${auth(token)}\nrequest = function() return wrk.format("GET", ${lua(path)}, h) end\n`;
}

/** A PUT to a new key every time (`prefix` .. n). */
export function putNew(prefix: string, token: string, body: unknown): string {
  return (
    `local h = ${jsonAuth(token)}\nlocal b = ${lua(JSON.stringify(body))}\n` +
    `request = function() counter = counter + 1; return wrk.format("PUT", ${lua(prefix)} .. counter, h, b) end\n`
  );
}

/** Nine reads of `readPath` for every write of a new key under `writePrefix`. */
export function readWriteMix(
  readPath: string,
  writePrefix: string,
  token: string,
  body: unknown,
): string {
  return (
    `local h = ${jsonAuth(token)}\nlocal b = ${lua(JSON.stringify(body))}\n` +
    `request = function()\n  counter = counter + 1\n` +
    `  if counter % 10 == 0 then return wrk.format("PUT", ${lua(writePrefix)} .. counter, h, b) end\n` +
    `  return wrk.format("GET", ${lua(readPath)}, h)\nend\n`
  );
}

export function post(path: string, token: string, body: unknown): string {
  return `local h = ${jsonAuth(token)}\nlocal b = ${lua(JSON.stringify(body))}\nrequest = function() return wrk.format("POST", ${lua(path)}, h, b) end\n`;
}

/** The same JSON body POSTed to `path` without a token (a login). */
export function postPublic(path: string, body: unknown): string {
  return `local h = {["Content-Type"] = "application/json"}\nlocal b = ${lua(JSON.stringify(body))}\nrequest = function() return wrk.format("POST", ${lua(path)}, h, b) end\n`;
}

/** Reads with a different wrong secret for a real token id every time: each one is argon2 work unless limited. */
export function wrongTokenFlood(path: string, tokenId: string): string {
  return (
    `request = function()\n  counter = counter + 1\n` +
    `  return wrk.format("GET", ${lua(path)}, {["Authorization"] = "Bearer cfr_${tokenId}_" .. string.format("%043d", counter)})\nend\n`
  );
}

/** GETs of `prefix` .. n for n = 0, 1, … count - 1, then again from 0. */
export function cycleKeys(prefix: string, count: number, token: string): string {
  return (
    `local h = ${auth(token)}\n` +
    `request = function() counter = counter + 1; return wrk.format("GET", ${lua(prefix)} .. (counter % ${count}), h) end\n`
  );
}

/** GETs of random keys `ns<i>/k<j>` under `prefix`, i < namespaces, j < keys. */
export function randomKeys(
  prefix: string,
  namespaces: number,
  keys: number,
  token: string,
): string {
  return (
    `local h = ${auth(token)}\nmath.randomseed(42)\n` +
    `request = function() return wrk.format("GET", ${lua(prefix)} .. "ns" .. math.random(0, ${namespaces - 1}) .. "/k" .. math.random(0, ${keys - 1}), h) end\n`
  );
}

/** etcd's JSON gateway: a linearizable range read of one key. */
export function etcdRange(key: string, token: string): string {
  return (
    `local h = {["Authorization"] = ${lua(token)}, ["Content-Type"] = "application/json"}\n` +
    `local b = '{"key":"' .. base64(${lua(key)}) .. '"}'\n` +
    `request = function() return wrk.format("POST", "/v3/kv/range", h, b) end\n`
  );
}

/** etcd's JSON gateway: a put of a new key every time. */
export function etcdPutNew(prefix: string, value: string, token: string): string {
  return (
    `local h = {["Authorization"] = ${lua(token)}, ["Content-Type"] = "application/json"}\n` +
    `local v = base64(${lua(value)})\n` +
    `request = function()\n  counter = counter + 1\n` +
    `  return wrk.format("POST", "/v3/kv/put", h, '{"key":"' .. base64(${lua(prefix)} .. counter) .. '","value":"' .. v .. '"}')\nend\n`
  );
}
