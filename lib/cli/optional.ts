// The optional peer dependencies: the chart renderers (bench, report) and the build tools (build).
// A dependent project does not get them with cuda-kernels; the command that needs them asks.
import * as fs from 'node:fs';
import * as path from 'node:path';

const packageJson = path.join(__dirname, '..', '..', 'package.json');

/** What the charts need: vega and vega-lite draw the SVG, resvg rasterises it to PNG. */
export const CHART_PACKAGES = ['vega', 'vega-lite', '@resvg/resvg-js'] as const;

/** The peers among `names` that cannot be resolved from this package. */
export function missingPackages(names: readonly string[], from = __dirname): string[] {
  return names.filter((name) => {
    try {
      require.resolve(`${name}/package.json`, { paths: [from] });
      return false;
    } catch {
      try {
        // Some packages do not export their package.json; the main entry proves them installed.
        require.resolve(name, { paths: [from] });
        return false;
      } catch {
        return true;
      }
    }
  });
}

/** `name@range` as package.json's peerDependencies give it, for an install command to copy. */
function withRange(name: string): string {
  const peers = (JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { peerDependencies?: Record<string, string> })
    .peerDependencies;
  const range = peers?.[name];
  return range ? `${name}@${range}` : name;
}

/** Throws one clear error when `names` are not all installed: what is missing, for what, the fix. */
export function requirePackages(names: readonly string[], purpose: string, alternative?: string): void {
  const missing = missingPackages(names);
  if (missing.length === 0) return;
  const install = `npm install --save-dev ${missing.map(withRange).join(' ')}`;
  throw new Error(
    `${purpose} needs the optional package${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, ` +
      `not installed with cuda-kernels. Install: ${install}` +
      (alternative ? `; or ${alternative}` : ''),
  );
}
