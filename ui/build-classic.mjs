// context-meter.classic.js from context-meter.js, no bundler: the module has no imports, so the
// classic script is the module's text with its `export` keywords taken off, inside a function
// (its names stay its own) in strict mode (a module's). Any other import or export is refused,
// since this transform would not carry it.
//
//   node build-classic.mjs [OUT]     (default: context-meter.classic.js beside this file)
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, 'context-meter.js');
const out = process.argv[2] ?? join(here, 'context-meter.classic.js');

export function classic(module) {
  const lines = module.split('\n').map((line, i) => {
    if (/^\s*import[\s({*'"]/.test(line) || /\bimport\s*\(|import\.meta/.test(line)) {
      throw new Error(`context-meter.js:${i + 1}: an import: the classic build has no way to load it`);
    }
    if (/^\s*export\b/.test(line)) {
      const bare = line.replace(/^(\s*)export (?=(class|function|const|let) )/, '$1');
      if (bare === line) throw new Error(`context-meter.js:${i + 1}: only "export class|function|const|let" is carried over: ${line.trim()}`);
      return bare;
    }
    return line;
  });
  return `// Generated from context-meter.js by build-classic.mjs: edit that file, not this one.\n(() => {\n'use strict';\n${lines.join('\n')}})();\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const text = classic(readFileSync(source, 'utf8'));
    // Written whole, then renamed: a reader never sees half a script.
    const tmp = `${out}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, out);
  } catch (e) {
    console.error(`build-classic: ${e.message}`);
    process.exit(1);
  }
}
