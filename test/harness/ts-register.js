// Lets child processes and worker threads of the reliability tests run the TypeScript sources
// (lib/, test/harness/) directly, as jest does: `node -r ./test/harness/ts-register.js x.ts`.
// Each .ts file is transpiled on load (no type check; `npm run typecheck` does that).
const fs = require('node:fs');
const ts = require('typescript');

require.extensions['.ts'] = function (module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const { outputText } = ts.transpileModule(source, {
    fileName: filename,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
      sourceMap: false,
    },
  });
  module._compile(outputText, filename);
};
