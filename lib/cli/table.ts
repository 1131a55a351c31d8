import Table from 'cli-table3';

/** A cli-table3 table, coloured only when stdout is a terminal (logs and CI get plain text). */
export function makeTable(head: string[]): InstanceType<typeof Table> {
  const plain = !process.stdout.isTTY;
  return new Table({ head, style: plain ? { head: [], border: [] } : {} });
}
