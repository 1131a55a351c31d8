// What an APSP problem is, shared by the GPU op (lib/ops/apsp.ts), the CPU reference
// (lib/cpu/apsp.ts), the multi-process scheme (lib/distributed/apsp.ts) and the graph files (lib/io/graph.ts).
// It loads no binary, so the CPU reference stays usable without one.

/**
 * "No edge" in a weight matrix and "unreachable" in a distance matrix: 2^30 − 1. Two entries of at
 * most `INF` add up to less than 2^31, so sums never overflow int32, and a distance that would reach
 * `INF` reads as `INF`.
 */
export const INF = 0x3fffffff;
