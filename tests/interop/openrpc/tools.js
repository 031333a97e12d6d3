#!/usr/bin/env node
// Uses OpenRPC documents the way the OpenRPC project's own tools do, at their defaults:
//
// - `@open-rpc/schema-utils-js`: `dereferenceDocument`, then `MethodCallValidator` (a plain
//   `new Ajv()`: strict, formats validated, so an unknown `format` throws), asked about every
//   param of every method (each schema is compiled on its first use);
// - `@open-rpc/typings`: the TypeScript typings; every component schema a method refers to must
//   give a type of its own name (its `title`), not a name made of a hash.
//
//   node tools.js <document.json>...
//
// Prints one JSON line, {"ok":true,"documents":N,"types":{file:[names]}}, or
// {"ok":false,"file":..,"error":..}, and exits 0 or 1.
'use strict';

const fs = require('fs');
const { dereferenceDocument, MethodCallValidator } = require('@open-rpc/schema-utils-js');
const Typings = require('@open-rpc/typings').default;

const copy = (value) => JSON.parse(JSON.stringify(value));

async function check(file) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const validator = new MethodCallValidator(await dereferenceDocument(copy(doc)));
  for (const method of doc.methods) {
    // Every param present (`null`), so that every param's schema is compiled.
    const params =
      method.paramStructure === 'by-position'
        ? method.params.map(() => null)
        : Object.fromEntries(method.params.map((p) => [p.name, null]));
    try {
      validator.validate(method.name, params);
    } catch (e) {
      throw new Error(`MethodCallValidator on ${method.name}: ${e.message}`);
    }
  }
  // Warnings about `type` arrays go to the console: keep stdout for the summary.
  const log = console.log;
  console.log = (...args) => console.error(...args);
  let typescript;
  try {
    typescript = new Typings(await dereferenceDocument(copy(doc))).toString('typescript');
  } finally {
    console.log = log;
  }
  const declared = [...typescript.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1]);
  // The component schemas the methods refer to where tools look (not in our `x-` extensions).
  const referred = new Set();
  const walk = (value) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (key === '$ref' && typeof inner === 'string') referred.add(inner.replace('#/components/schemas/', ''));
        else if (!key.startsWith('x-')) walk(inner);
      }
    }
  };
  doc.methods.forEach((m) => walk([m.params, m.result]));
  for (const name of referred) {
    if (!declared.includes(name)) {
      throw new Error(`@open-rpc/typings gives no type named ${name} (it has: ${declared.join(', ')})`);
    }
  }
  return declared;
}

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write('usage: node tools.js <document.json>...\n');
    process.exit(2);
  }
  const types = {};
  for (const file of files) {
    try {
      types[file] = await check(file);
    } catch (e) {
      process.stdout.write(`${JSON.stringify({ ok: false, file, error: String(e && e.message) })}\n`);
      process.exit(1);
    }
  }
  process.stdout.write(`${JSON.stringify({ ok: true, documents: files.length, types })}\n`);
}

main();
