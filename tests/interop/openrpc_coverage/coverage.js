#!/usr/bin/env node
// Runs the OpenRPC project's `@open-rpc/test-coverage` at its defaults (its rules: faked params
// from the schemas and the examples; its HTTP transport to `servers[0].url`; its JSON reporter)
// against one OpenRPC document:
//
//   node coverage.js <document.json> [--skip METHOD]...
//
// `--skip` leaves a method out, as the CLI's does (a notification has no `result`, on which the
// tool throws).
//
// Its CLI cannot be used as is: it parses the document with the `@open-rpc/schema-utils-js` it
// depends on (1.16), whose meta-schema knows OpenRPC versions up to 1.2.6 only, so it refuses
// every 1.3.x document. This parses (validates and dereferences) the document with the current
// `@open-rpc/schema-utils-js` (2.x) instead, and hands it to test-coverage's own entry point,
// as the CLI does. The JSON reporter prints the calls (with `valid` and `reason`) on stdout.
'use strict';

const { parseOpenRPCDocument } = require('@open-rpc/schema-utils-js');
const testCoverage = require('@open-rpc/test-coverage').default;

(async () => {
  const [file, ...rest] = process.argv.slice(2);
  const skip = [];
  for (let i = 0; i < rest.length; i += 2) {
    if (rest[i] !== '--skip' || rest[i + 1] === undefined) {
      throw new Error(`usage: node coverage.js <document.json> [--skip METHOD]... (not ${rest[i]})`);
    }
    skip.push(rest[i + 1]);
  }
  const doc = await parseOpenRPCDocument(require('fs').readFileSync(file, 'utf8'));
  await testCoverage({ openrpcDocument: doc, transport: 'http', reporters: ['json'], skip });
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
