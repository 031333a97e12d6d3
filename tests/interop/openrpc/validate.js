#!/usr/bin/env node
// Validates OpenRPC documents against the official OpenRPC meta-schema (@open-rpc/meta-schema,
// whose JSON Schemas refer to @json-schema-tools/meta-schema), and compiles every schema in
// each document's `components.schemas` as draft-07 so that `$ref`s that point nowhere fail too.
//
//   node validate.js <document.json>...
//
// Prints one JSON line, {"ok":true,"documents":N}, or {"ok":false,"file":..,"errors":[..]},
// and exits 0 or 1.
'use strict';

const fs = require('fs');
const Ajv = require('ajv');

// Both meta-schemas name a `$schema` Ajv does not know; they are draft-07 documents.
const openrpc = JSON.parse(JSON.stringify(require('@open-rpc/meta-schema').default));
const jsonSchema = JSON.parse(JSON.stringify(require('@json-schema-tools/meta-schema').default));
delete openrpc.$schema;
delete jsonSchema.$schema;

const meta = new Ajv({ strict: false, allErrors: true, validateFormats: false });
meta.addSchema(jsonSchema, 'https://meta.json-schema.tools');
const validate = meta.compile(openrpc);

function fail(file, errors) {
  process.stdout.write(`${JSON.stringify({ ok: false, file, errors })}\n`);
  process.exit(1);
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: node validate.js <document.json>...\n');
  process.exit(2);
}
for (const file of files) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!validate(doc)) {
    fail(file, validate.errors);
  }
  // The document's own schemas, as one draft-07 schema whose `$ref`s must resolve.
  const schemas = new Ajv({ strict: false, validateFormats: false });
  const root = { $id: 'urn:jsonrpc-duplex:document', components: doc.components || {} };
  try {
    schemas.addSchema(root);
    for (const name of Object.keys((doc.components || {}).schemas || {})) {
      schemas.getSchema(`urn:jsonrpc-duplex:document#/components/schemas/${name}`);
    }
    for (const method of doc.methods) {
      // Every schema the method names, our extensions' included.
      const named = [];
      for (const d of [...method.params, ...(method.result ? [method.result] : [])]) {
        named.push([d.name, d.schema], [`${d.name}/x-stream`, d['x-stream']], [`${d.name}/x-progress`, d['x-progress']]);
      }
      named.push(['x-params-object', method['x-params-object']]);
      for (const [code, schema] of Object.entries(method['x-error-data'] || {})) {
        named.push([`x-error-data/${code}`, schema]);
      }
      for (const [name, schema] of named) {
        if (schema !== undefined) {
          const id = `urn:jsonrpc-duplex:check:${encodeURIComponent(method.name)}:${encodeURIComponent(name)}`;
          schemas.compile({ $id: id, ...wrap(schema) });
        }
      }
    }
  } catch (error) {
    fail(file, [String(error)]);
  }
}
process.stdout.write(`${JSON.stringify({ ok: true, documents: files.length })}\n`);

// A descriptor's schema refers to `#/components/schemas/..` of the document.
function wrap(schema) {
  return { allOf: [rebase(schema)] };
}

function rebase(value) {
  if (Array.isArray(value)) return value.map(rebase);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `urn:jsonrpc-duplex:document${v}` : rebase(v);
  }
  return out;
}
